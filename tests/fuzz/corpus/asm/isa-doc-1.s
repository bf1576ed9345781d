.queue dma
dma_copy src=sbuf:0x0 dst=hbm:0x10000 type=fp32 count=[64,16] dst_stride=[4,256] src_stride=[4,196608]
sem_signal sem=3 value=1          # the tile is in HBM
sem_wait sem=4 value=1            # the sum over the chips is in HBM
dma_copy src=hbm:0x10000 dst=sbuf:0x0 type=fp32 count=[64,16] src_stride=[4,256] dst_stride=[4,196608]
halt

.queue cc
sem_wait sem=3 value=1
all_reduce dtype=fp32 algorithm=ring hbm=0x10000 count=1024
sem_signal sem=4 value=1
halt
