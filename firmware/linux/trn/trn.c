// SPDX-License-Identifier: GPL-2.0
/*
 * trn: the Linux driver of the trnsim device's PCI function (docs/linux-driver.md "The module").
 *
 * Probe: enables the function, maps BAR0 (the registers) and BAR2 (the device memory window), checks ID, turns on
 * bus mastering with a 48-bit DMA mask, and registers /dev/trn0 (a misc device). The interface is trn_ioctl.h:
 * registers, device memory through the window, DMA-coherent buffers in host RAM for the device's space host
 * (mmap()ed by the program), LOAD_PROGRAM (a queue's instructions into HBM and its Q_ registers), and RUN: doorbell,
 * then a bounded wait for DONE or ERROR, the error registers turned into -EIO plus the fault's code, queue, index,
 * field and text.
 *
 * Waiting polls STATUS: QEMU 7.2's proxy delivers INTx only through KVM's irqchip, which the test machines cannot
 * run (docs/linux-driver.md), so the module does not depend on the interrupt.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "spec/trn_regs_c.h"
#include "trn_ioctl.h"

#define TRN_MAX_XFER (1ull << 30)
#define TRN_MAX_DMA_BUF (256ull << 20)
#define TRN_BOUNCE_BYTES (64u << 10)

struct trn_dev {
	struct pci_dev *pdev;
	void __iomem *regs;
	void __iomem *win;
	u64 win_at; /* device address the window shows now */
	struct mutex lock; /* the window and RUN */
	struct miscdevice misc;
};

struct trn_buf {
	struct list_head node;
	void *cpu;
	dma_addr_t bus;
	size_t bytes;
	u64 offset; /* mmap offset */
};

struct trn_file {
	struct trn_dev *td;
	struct mutex lock;
	struct list_head bufs;
	u64 next_offset;
};

static struct trn_dev *trn_device; /* one function: /dev/trn0 */

static u32 trn_rd(struct trn_dev *td, u32 off)
{
	return ioread32(td->regs + off);
}

static void trn_wr(struct trn_dev *td, u32 off, u32 v)
{
	iowrite32(v, td->regs + off);
}

/* Points the window at the 4 KiB page holding `addr`; returns the window offset of `addr`. */
static u64 trn_window(struct trn_dev *td, u64 addr)
{
	const u64 base = addr & ~0xFFFull;

	if (base != td->win_at) {
		trn_wr(td, TRN_PCIE_WIN_HI, upper_32_bits(base));
		trn_wr(td, TRN_PCIE_WIN_LO, lower_32_bits(base));
		td->win_at = base;
	}
	return addr - base;
}

static long trn_mem(struct trn_dev *td, struct trn_mem *m, bool write)
{
	u8 *bounce;
	u64 done = 0;
	long ret = 0;

	if (m->bytes > TRN_MAX_XFER)
		return -EINVAL;
	bounce = kmalloc(TRN_BOUNCE_BYTES, GFP_KERNEL);
	if (!bounce)
		return -ENOMEM;
	mutex_lock(&td->lock);
	while (done < m->bytes) {
		const u64 at = trn_window(td, m->device_addr + done);
		u64 chunk = min_t(u64, m->bytes - done, TRN_BOUNCE_BYTES);
		void __user *user = u64_to_user_ptr(m->user_ptr + done);

		chunk = min_t(u64, chunk, TRN_PCI_BAR_WINDOW_BYTES - at);
		if (write) {
			if (copy_from_user(bounce, user, chunk)) {
				ret = -EFAULT;
				break;
			}
			memcpy_toio(td->win + at, bounce, chunk);
		} else {
			memcpy_fromio(bounce, td->win + at, chunk);
			if (copy_to_user(user, bounce, chunk)) {
				ret = -EFAULT;
				break;
			}
		}
		done += chunk;
	}
	mutex_unlock(&td->lock);
	kfree(bounce);
	return ret;
}

/* Core `core`'s register block: its offsets + core * CORE_STRIDE; -EINVAL past CHIP_CORES. */
static long trn_core_base(struct trn_dev *td, u32 core, u32 *base)
{
	if (core >= trn_rd(td, TRN_CHIP_CORES))
		return -EINVAL;
	*base = core * TRN_CORE_STRIDE;
	return 0;
}

static long trn_load_program(struct trn_dev *td, struct trn_program *p)
{
	const u64 hbm = ((u64)trn_rd(td, TRN_HBM_BYTES_HI) << 32) | trn_rd(td, TRN_HBM_BYTES_LO);
	u32 base;
	const u64 bytes = (u64)p->count * 64;
	struct trn_mem m = {
		.device_addr = TRN_HBM_BASE + p->hbm_addr, .user_ptr = p->user_ptr, .bytes = bytes,
	};
	long ret;

	if (trn_core_base(td, p->core, &base) || p->reserved || p->queue >= trn_rd(td, TRN_NUM_QUEUES) ||
	    p->count == 0 || p->count > (1u << 20) || p->hbm_addr > hbm || bytes > hbm - p->hbm_addr)
		return -EINVAL;
	ret = trn_mem(td, &m, true);
	if (ret)
		return ret;
	trn_wr(td, base + TRN_QUEUE_REG(p->queue, TRN_Q_BASE_LO), lower_32_bits(p->hbm_addr));
	trn_wr(td, base + TRN_QUEUE_REG(p->queue, TRN_Q_BASE_HI), upper_32_bits(p->hbm_addr));
	trn_wr(td, base + TRN_QUEUE_REG(p->queue, TRN_Q_LEN), p->count);
	return 0;
}

static void trn_fault(struct trn_dev *td, u32 base, struct trn_run *r)
{
	u32 len, w;

	r->err_code = trn_rd(td, base + TRN_ERR_CODE);
	r->err_queue = trn_rd(td, base + TRN_ERR_QUEUE);
	r->err_index = trn_rd(td, base + TRN_ERR_INDEX);
	r->err_info = trn_rd(td, base + TRN_ERR_INFO);
	len = min_t(u32, trn_rd(td, base + TRN_ERR_DETAIL_LEN), sizeof(r->detail) - 1);
	for (w = 0; 4 * w < len; w++) {
		const u32 v = trn_rd(td, base + TRN_ERR_DETAIL_REG(w));
		u32 b;

		for (b = 0; b < 4 && 4 * w + b < len; b++)
			r->detail[4 * w + b] = (char)(v >> (8 * b));
	}
	r->detail[len] = '\0';
	dev_warn(&td->pdev->dev, "device error %s (%u) on core %u: queue %u, instruction %u, field %u: %s\n",
		 r->err_code < ARRAY_SIZE(trn_errcode_names) && trn_errcode_names[r->err_code] ?
			 trn_errcode_names[r->err_code] : "unknown",
		 r->err_code, r->core, r->err_queue, r->err_index, r->err_info, r->detail);
}

static long trn_run(struct trn_dev *td, struct trn_run *r)
{
	unsigned long deadline;
	long ret = -ETIMEDOUT;
	u32 base;

	if (trn_core_base(td, r->core, &base) || r->reserved)
		return -EINVAL;
	mutex_lock(&td->lock);
	if (trn_rd(td, base + TRN_STATUS) & TRN_STATUS_BUSY_MASK) {
		mutex_unlock(&td->lock);
		return -EBUSY;
	}
	trn_wr(td, base + TRN_DOORBELL, r->queues);
	deadline = jiffies + msecs_to_jiffies(r->timeout_ms);
	for (;;) {
		const u32 s = trn_rd(td, base + TRN_STATUS);

		if (s & TRN_STATUS_ERROR_MASK) {
			trn_fault(td, base, r);
			ret = -EIO;
			break;
		}
		if (s & TRN_STATUS_DONE_MASK) {
			r->cycles = ((u64)trn_rd(td, base + TRN_CYCLE_HI) << 32) | trn_rd(td, base + TRN_CYCLE_LO);
			ret = 0;
			break;
		}
		if (time_after(jiffies, deadline))
			break;
		usleep_range(200, 1000);
	}
	/* The run's end is taken: acknowledge the core's interrupt (RW1C), so the chip's line is low again for the
	 * other cores. */
	if (ret != -ETIMEDOUT)
		trn_wr(td, base + TRN_INT_STATUS, TRN_INT_STATUS_DONE_MASK | TRN_INT_STATUS_ERROR_MASK);
	mutex_unlock(&td->lock);
	return ret;
}

static long trn_dma_alloc(struct trn_file *f, struct trn_dma_buf *d)
{
	struct trn_buf *b;

	if (d->bytes == 0 || d->bytes > TRN_MAX_DMA_BUF)
		return -EINVAL;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->bytes = PAGE_ALIGN(d->bytes);
	b->cpu = dma_alloc_coherent(&f->td->pdev->dev, b->bytes, &b->bus, GFP_KERNEL);
	if (!b->cpu) {
		kfree(b);
		return -ENOMEM;
	}
	mutex_lock(&f->lock);
	b->offset = f->next_offset;
	f->next_offset += b->bytes;
	list_add(&b->node, &f->bufs);
	mutex_unlock(&f->lock);
	d->bus_addr = b->bus;
	d->mmap_offset = b->offset;
	return 0;
}

static void trn_buf_free(struct trn_file *f, struct trn_buf *b)
{
	list_del(&b->node);
	dma_free_coherent(&f->td->pdev->dev, b->bytes, b->cpu, b->bus);
	kfree(b);
}

static long trn_dma_free(struct trn_file *f, struct trn_dma_buf *d)
{
	struct trn_buf *b, *n;
	long ret = -EINVAL;

	mutex_lock(&f->lock);
	list_for_each_entry_safe(b, n, &f->bufs, node) {
		if (b->bus == d->bus_addr) {
			trn_buf_free(f, b);
			ret = 0;
			break;
		}
	}
	mutex_unlock(&f->lock);
	return ret;
}

static long trn_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct trn_file *f = file->private_data;
	struct trn_dev *td = f->td;
	void __user *up = (void __user *)arg;
	long ret = 0;

	switch (cmd) {
	case TRN_IOC_INFO: {
		struct trn_info i = {
			.ioctl_version = TRN_IOCTL_VERSION,
			.vendor = td->pdev->vendor,
			.device = td->pdev->device,
			.id = trn_rd(td, TRN_ID),
			.version = trn_rd(td, TRN_VERSION),
			.irq_mode = 0,
			.bar0_bytes = pci_resource_len(td->pdev, TRN_PCI_BAR_MMIO),
			.window_bytes = pci_resource_len(td->pdev, TRN_PCI_BAR_WINDOW),
			.cores = trn_rd(td, TRN_CHIP_CORES),
			.core_stride = TRN_CORE_STRIDE,
		};

		return copy_to_user(up, &i, sizeof(i)) ? -EFAULT : 0;
	}
	case TRN_IOC_READ_REG:
	case TRN_IOC_WRITE_REG: {
		struct trn_reg r;

		if (copy_from_user(&r, up, sizeof(r)))
			return -EFAULT;
		if (r.offset % 4 || r.offset >= TRN_PCI_BAR_MMIO_BYTES)
			return -EINVAL;
		if (cmd == TRN_IOC_WRITE_REG) {
			trn_wr(td, r.offset, r.value);
			return 0;
		}
		r.value = trn_rd(td, r.offset);
		return copy_to_user(up, &r, sizeof(r)) ? -EFAULT : 0;
	}
	case TRN_IOC_READ_MEM:
	case TRN_IOC_WRITE_MEM: {
		struct trn_mem m;

		if (copy_from_user(&m, up, sizeof(m)))
			return -EFAULT;
		return trn_mem(td, &m, cmd == TRN_IOC_WRITE_MEM);
	}
	case TRN_IOC_DMA_ALLOC:
	case TRN_IOC_DMA_FREE: {
		struct trn_dma_buf d;

		if (copy_from_user(&d, up, sizeof(d)))
			return -EFAULT;
		if (cmd == TRN_IOC_DMA_FREE)
			return trn_dma_free(f, &d);
		ret = trn_dma_alloc(f, &d);
		if (ret == 0 && copy_to_user(up, &d, sizeof(d)))
			ret = -EFAULT;
		return ret;
	}
	case TRN_IOC_LOAD_PROGRAM: {
		struct trn_program p;

		if (copy_from_user(&p, up, sizeof(p)))
			return -EFAULT;
		return trn_load_program(td, &p);
	}
	case TRN_IOC_RUN: {
		struct trn_run *r = kzalloc(sizeof(*r), GFP_KERNEL);

		if (!r)
			return -ENOMEM;
		if (copy_from_user(r, up, sizeof(*r))) {
			kfree(r);
			return -EFAULT;
		}
		memset(r->detail, 0, sizeof(r->detail));
		ret = trn_run(td, r);
		if (copy_to_user(up, r, sizeof(*r)))
			ret = -EFAULT;
		kfree(r);
		return ret;
	}
	default:
		return -ENOTTY;
	}
}

static int trn_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct trn_file *f = file->private_data;
	const u64 offset = (u64)vma->vm_pgoff << PAGE_SHIFT;
	const u64 bytes = vma->vm_end - vma->vm_start;
	struct trn_buf *b;
	int ret = -EINVAL;

	mutex_lock(&f->lock);
	list_for_each_entry(b, &f->bufs, node) {
		if (b->offset == offset && bytes <= b->bytes) {
			vma->vm_pgoff = 0; /* dma_mmap_coherent maps from the buffer's start */
			ret = dma_mmap_coherent(&f->td->pdev->dev, vma, b->cpu, b->bus, bytes);
			break;
		}
	}
	mutex_unlock(&f->lock);
	return ret;
}

static int trn_open(struct inode *inode, struct file *file)
{
	struct trn_file *f;

	if (!trn_device)
		return -ENODEV;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->td = trn_device;
	mutex_init(&f->lock);
	INIT_LIST_HEAD(&f->bufs);
	file->private_data = f;
	return 0;
}

static int trn_release(struct inode *inode, struct file *file)
{
	struct trn_file *f = file->private_data;
	struct trn_buf *b, *n;

	list_for_each_entry_safe(b, n, &f->bufs, node)
		trn_buf_free(f, b);
	kfree(f);
	return 0;
}

static const struct file_operations trn_fops = {
	.owner = THIS_MODULE,
	.open = trn_open,
	.release = trn_release,
	.unlocked_ioctl = trn_ioctl,
	.mmap = trn_mmap,
};

static int trn_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct trn_dev *td;
	u32 ident;
	int ret;

	if (trn_device)
		return -EBUSY; /* one function per system (/dev/trn0) */
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, BIT(TRN_PCI_BAR_MMIO) | BIT(TRN_PCI_BAR_WINDOW), "trn");
	if (ret)
		return ret;
	td = devm_kzalloc(&pdev->dev, sizeof(*td), GFP_KERNEL);
	if (!td)
		return -ENOMEM;
	td->pdev = pdev;
	td->regs = pcim_iomap_table(pdev)[TRN_PCI_BAR_MMIO];
	td->win = pcim_iomap_table(pdev)[TRN_PCI_BAR_WINDOW];
	mutex_init(&td->lock);
	ident = trn_rd(td, TRN_ID);
	if (ident != TRN_ID_VALUE) {
		dev_err(&pdev->dev, "ID reads %#x, not %#x (\"TRN2\"): not a trnsim device\n", ident, TRN_ID_VALUE);
		return -ENODEV;
	}
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(48));
	if (ret)
		return ret;
	pci_set_master(pdev);
	td->win_at = ((u64)trn_rd(td, TRN_PCIE_WIN_HI) << 32) | trn_rd(td, TRN_PCIE_WIN_LO);
	td->misc.minor = MISC_DYNAMIC_MINOR;
	td->misc.name = "trn0";
	td->misc.fops = &trn_fops;
	td->misc.mode = 0666;
	ret = misc_register(&td->misc);
	if (ret)
		return ret;
	pci_set_drvdata(pdev, td);
	trn_device = td;
	/* The chip's NeuronCores: core c's register block at c * CORE_STRIDE of BAR0 (TRN_IOC_LOAD_PROGRAM and
	 * TRN_IOC_RUN name the core; the register ioctls reach every block). */
	dev_info(&pdev->dev, "trnsim device, VERSION %#x, %u NeuronCore(s), /dev/trn0 (STATUS polled)\n",
		 trn_rd(td, TRN_VERSION), trn_rd(td, TRN_CHIP_CORES));
	return 0;
}

static void trn_remove(struct pci_dev *pdev)
{
	struct trn_dev *td = pci_get_drvdata(pdev);

	misc_deregister(&td->misc);
	trn_device = NULL;
}

static const struct pci_device_id trn_ids[] = {
	{ PCI_DEVICE(TRN_PCI_VENDOR_ID, TRN_PCI_DEVICE_ID) },
	{ 0 },
};
MODULE_DEVICE_TABLE(pci, trn_ids);

static struct pci_driver trn_driver = {
	.name = "trn",
	.id_table = trn_ids,
	.probe = trn_probe,
	.remove = trn_remove,
};
module_pci_driver(trn_driver);

MODULE_DESCRIPTION("trnsim: the simulated Trainium-class accelerator's PCI function");
MODULE_LICENSE("GPL");
