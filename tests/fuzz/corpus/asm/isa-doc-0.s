# a 16x16 bf16 stationary and a 16x512 bf16 moving tile; SBUF partitions of 196608 bytes, PSUM of 16384
.queue dma
dma_copy src=hbm:0x1000 dst=sbuf:0x0 type=bf16->bf16 count=[16,16] src_stride=[2,32] dst_stride=[2,196608]
dma_copy src=hbm:0x2000 dst=sbuf:0x200 type=bf16 count=[512,16] dst_stride=[2,196608]
sem_signal sem=0 value=1          # waits for both copies first
sem_wait sem=1 value=1
psum_copy src=psum:0x0 dst=sbuf:0x1000 type=fp32->bf16 count=[512,16] dst_stride=[2,196608] src_stride=[4,16384]
halt

.queue te
sem_wait sem=0 value=1
load_stationary dtype=bf16 sbuf=0x0 k=16 m=16
multiply_moving dtype=bf16 sbuf=0x200 psum=0x0 k=16 n=512
sem_signal sem=1 value=1
halt
