module trn_te_delay;
endmodule
