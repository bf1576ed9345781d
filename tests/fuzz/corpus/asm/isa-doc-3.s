.queue te
load_stationary dtype=bf16 sbuf=0x0 k=16 m=16  # 0
multiply_moving dtype=bf16 sbuf=0x200 psum=0x0 k=16 n=512 acc  # 1
.queue dma
dma_copy src=hbm:0x1000 dst=sbuf:0x0 type=bf16->bf16 count=[64,16,1,1] src_stride=[2,128,0,0] dst_stride=[2,196608,0,0] no_sat rne  # 0
