package trn_te_pkg;
endpackage
