module trn_te_pe;
endmodule
