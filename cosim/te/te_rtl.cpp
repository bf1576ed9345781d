void trnsim_te_rtl_placeholder() {}
