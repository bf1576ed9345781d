module trn_te_array;
endmodule
