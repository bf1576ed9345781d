.queue vec
tensor_reduce op=max partitions=16 free=[128] out=sbuf:0:0x0 in0=psum:0:0x0            # row max -> [16, 1]
tensor_scalar op=multiply imm0=-1 partitions=16 free=[1] out=sbuf:0:0x0 in0=sbuf:0:0x0  # negate it
sem_signal sem=1 value=1
sem_wait sem=2 value=1
tensor_scalar op=rdivide imm0=1 partitions=16 free=[1] out=sbuf:0:0x8 in0=sbuf:0:0x4   # 1 / row sum
tensor_tensor op=multiply partitions=16 free=[128] out=sbuf:0:0x100 out_type=bf16 in0=sbuf:0:0x200 in1=sbuf:0:0x8 in1_stride=[0,0]
halt
.queue act
sem_wait sem=1 value=1
activation func=exp bias=sbuf:0:0x0 partitions=16 free=[128] out=sbuf:0:0x200 in0=psum:0:0x0 sum=sbuf:0:0x4   # exp(x - max), row sums
sem_signal sem=2 value=1
halt
