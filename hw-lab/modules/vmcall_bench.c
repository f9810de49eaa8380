// SPDX-License-Identifier: GPL-2.0
/*
 * vmcall_bench: time a no-op hypercall round trip from the guest kernel (VMCALL on Intel,
 * VMMCALL on AMD) under KVM. The hypercall number is one KVM does not implement, so KVM
 * answers -KVM_ENOSYS and does nothing else: what is timed is the exit, KVM's dispatch,
 * and the entry.
 *
 * On bare metal VMCALL/VMMCALL raise #UD, and a hypervisor other than KVM may treat the
 * call differently, so the module refuses to load unless the kernel identified KVM.
 *
 *   insmod vmcall_bench.ko [samples=N]
 *   cat /proc/vmcall_bench     (each read runs a fresh batch)
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/vmalloc.h>
#include <asm/hypervisor.h>
#include <asm/msr.h>
#include <asm/processor.h>

#include "hwlab_compat.h"

#define KVM_ENOSYS_RET (-1000L)
#define UNKNOWN_HC 0x7fffffffUL

static unsigned int samples = 10000;
module_param(samples, uint, 0444);
MODULE_PARM_DESC(samples, "hypercalls per read of /proc/vmcall_bench");

static bool use_vmmcall;

static long hypercall(unsigned long nr)
{
	long ret;

	if (use_vmmcall)
		asm volatile("vmmcall" : "=a"(ret) : "a"(nr) : "memory");
	else
		asm volatile("vmcall" : "=a"(ret) : "a"(nr) : "memory");
	return ret;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return (x > y) - (x < y);
}

static int vb_show(struct seq_file *m, void *v)
{
	u64 *d, sum = 0;
	unsigned int i;
	unsigned long flags;
	long ret = 0;

	d = kvmalloc_array(samples, sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	for (i = 0; i < samples; i++) {
		u64 t0, t1;

		local_irq_save(flags); /* an interrupt inside the window is not the hypercall */
		t0 = rdtsc_ordered();
		ret = hypercall(UNKNOWN_HC);
		t1 = rdtsc_ordered();
		local_irq_restore(flags);
		d[i] = t1 - t0;
		sum += d[i];
		if (!(i & 1023))
			cond_resched();
	}
	sort(d, samples, sizeof(*d), cmp_u64, NULL);
	seq_printf(m, "insn %s\ncount %u\nmin %llu\nmedian %llu\nmean %llu\nmax %llu\nret %ld\n",
		   use_vmmcall ? "vmmcall" : "vmcall", samples, d[0], d[samples / 2],
		   div_u64(sum, samples), d[samples - 1], ret);
	kvfree(d);
	return 0;
}

static int vb_open(struct inode *inode, struct file *file)
{
	return single_open(file, vb_show, NULL);
}

HW_PROC_FILE(vb_ops, vb_open, NULL);

static int __init vb_init(void)
{
	unsigned int eax, sig[3] = {0, 0, 0};
	long ret;

	if (!boot_cpu_has(X86_FEATURE_HYPERVISOR)) {
		pr_err("vmcall_bench: refusing to load: no hypervisor (CPUID.1:ECX[31] is clear); "
		       "on bare metal VMCALL/VMMCALL raise #UD. Load it inside a KVM guest.\n");
		return -ENODEV;
	}
	cpuid(0x40000000, &eax, &sig[0], &sig[1], &sig[2]);
	if (!hypervisor_is_type(X86_HYPER_KVM)) {
		pr_err("vmcall_bench: refusing to load: the hypervisor is not KVM (CPUID 0x40000000 "
		       "signature '%.12s'); nothing is known to answer a KVM hypercall here.\n",
		       (char *)sig);
		return -ENODEV;
	}
	if (!samples || samples > 10000000) {
		pr_err("vmcall_bench: samples=%u: give 1 to 10000000\n", samples);
		return -EINVAL;
	}
	use_vmmcall = boot_cpu_data.x86_vendor == X86_VENDOR_AMD;
#ifdef X86_VENDOR_HYGON /* 4.20 and later */
	use_vmmcall = use_vmmcall || boot_cpu_data.x86_vendor == X86_VENDOR_HYGON;
#endif
	ret = hypercall(UNKNOWN_HC);
	if (ret != KVM_ENOSYS_RET) {
		pr_err("vmcall_bench: refusing to load: a hypercall with an unknown number returned "
		       "%ld, not -KVM_ENOSYS (%ld)\n", ret, KVM_ENOSYS_RET);
		return -ENODEV;
	}
	if (!proc_create("vmcall_bench", 0400, NULL, &vb_ops))
		return -ENOMEM;
	pr_info("vmcall_bench: %s answered by KVM; read /proc/vmcall_bench\n",
		use_vmmcall ? "vmmcall" : "vmcall");
	return 0;
}

static void __exit vb_exit(void)
{
	remove_proc_entry("vmcall_bench", NULL);
}

module_init(vb_init);
module_exit(vb_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vmemlab: time a no-op KVM hypercall (VMCALL/VMMCALL) round trip");
