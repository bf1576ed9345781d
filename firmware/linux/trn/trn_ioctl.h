/* The user interface of the trnsim Linux module (firmware/linux/trn/trn.c, docs/linux-driver.md "The module"):
 * /dev/trn0, its ioctls and mmap. Shared by the module (kernel C) and user programs (C or C++). All sizes in
 * bytes; device addresses are those of the register map (spec/trn_regs_c.h: HBM_BASE + offset, ...). */
#ifndef TRN_IOCTL_H
#define TRN_IOCTL_H

#ifdef __KERNEL__
#include <linux/ioctl.h>
#include <linux/types.h>
#else
#include <stdint.h>
#include <sys/ioctl.h>
typedef uint32_t __u32;
typedef uint64_t __u64;
#endif

#define TRN_IOCTL_VERSION 2u

/* TRN_IOC_INFO: what the function and its registers say. */
struct trn_info {
  __u32 ioctl_version; /* TRN_IOCTL_VERSION */
  __u32 vendor, device; /* PCI IDs */
  __u32 id, version;    /* ID and VERSION registers */
  __u32 irq_mode;       /* 0: the module polls STATUS (no INTx reached it), 1: INTx */
  __u64 bar0_bytes, window_bytes;
  __u32 cores;       /* CHIP_CORES: the chip's NeuronCores, 0 .. cores - 1 */
  __u32 core_stride; /* CORE_STRIDE: BAR0 bytes from one core's register block to the next */
};

/* TRN_IOC_READ_REG / TRN_IOC_WRITE_REG: one 32-bit register at BAR0 offset `offset` (4-byte aligned, < bar0_bytes;
 * else -EINVAL). */
struct trn_reg {
  __u32 offset;
  __u32 value;
};

/* TRN_IOC_READ_MEM / TRN_IOC_WRITE_MEM: `bytes` of device memory at device address `device_addr` to/from the user
 * buffer `user_ptr`, through the BAR2 window (the module moves PCIE_WIN as needed). A range the device does not map
 * reads all ones; -EFAULT for a bad user buffer, -EINVAL for bytes > 1 GiB. */
struct trn_mem {
  __u64 device_addr;
  __u64 user_ptr;
  __u64 bytes;
};

/* TRN_IOC_DMA_ALLOC: a DMA-coherent buffer of `bytes` in host RAM for the device's space host. Returns its bus
 * address (what a dma_copy names as host:ADDR) and the offset to mmap() on /dev/trn0 to fill or read it. Freed with
 * TRN_IOC_DMA_FREE (by bus address) or when the file is closed. -ENOMEM, -EINVAL (0 bytes, > 256 MiB). */
struct trn_dma_buf {
  __u64 bytes;
  __u64 bus_addr;    /* out */
  __u64 mmap_offset; /* out */
};

/* TRN_IOC_LOAD_PROGRAM: `count` 64-byte instructions (docs/isa.md) from `user_ptr` into HBM at byte `hbm_addr`
 * (through the window), then Q_BASE_LO/HI = hbm_addr and Q_LEN = count of queue `queue` of core `core`. -EINVAL for
 * a core past CHIP_CORES, a queue past NUM_QUEUES, count 0 or > 1M, or a program not inside HBM; -EFAULT for a bad
 * buffer. */
struct trn_program {
  __u32 queue;
  __u32 count;
  __u64 hbm_addr;
  __u64 user_ptr;
  __u32 core;
  __u32 reserved; /* 0 */
};

/* TRN_IOC_RUN: rings core `core`'s DOORBELL with `queues` (one bit per queue; the caller has set Q_BASE/Q_LEN) and
 * waits, at most `timeout_ms`, for its STATUS.DONE or STATUS.ERROR. 0 on DONE (cycles filled in); -EIO when the core
 * stopped with an error (err_* filled in, detail = ERR_DETAIL's text); -ETIMEDOUT when neither came (the core is left
 * running); -EBUSY when the core is busy already; -EINVAL for a core past CHIP_CORES. On DONE and on the error the
 * core's INT_STATUS is acknowledged (the chip's interrupt line drops for the other cores). */
struct trn_run {
  __u32 queues;
  __u32 timeout_ms;
  __u64 cycles;                              /* out: CYCLE_HI:LO */
  __u32 err_code, err_queue, err_index, err_info; /* out */
  char detail[256];                          /* out: ERR_DETAIL, NUL-terminated */
  __u32 core;
  __u32 reserved;                            /* 0 */
};

#define TRN_IOC_MAGIC 'T'
#define TRN_IOC_INFO _IOR(TRN_IOC_MAGIC, 1, struct trn_info)
#define TRN_IOC_READ_REG _IOWR(TRN_IOC_MAGIC, 2, struct trn_reg)
#define TRN_IOC_WRITE_REG _IOW(TRN_IOC_MAGIC, 3, struct trn_reg)
#define TRN_IOC_READ_MEM _IOW(TRN_IOC_MAGIC, 4, struct trn_mem)
#define TRN_IOC_WRITE_MEM _IOW(TRN_IOC_MAGIC, 5, struct trn_mem)
#define TRN_IOC_DMA_ALLOC _IOWR(TRN_IOC_MAGIC, 6, struct trn_dma_buf)
#define TRN_IOC_DMA_FREE _IOW(TRN_IOC_MAGIC, 7, struct trn_dma_buf)
#define TRN_IOC_RUN _IOWR(TRN_IOC_MAGIC, 8, struct trn_run)
#define TRN_IOC_LOAD_PROGRAM _IOW(TRN_IOC_MAGIC, 9, struct trn_program)

#endif /* TRN_IOCTL_H */
