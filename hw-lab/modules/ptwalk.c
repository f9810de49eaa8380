// SPDX-License-Identifier: GPL-2.0
/*
 * ptwalk: walk one process's page tables with the kernel's generic accessors and show
 * every level. Inside a guest this is the gVA -> gPA half of a 2-D walk.
 *
 *   echo "<pid> <vaddr>" > /proc/ptwalk      (vaddr in hex with 0x, or decimal)
 *   cat /proc/ptwalk
 *
 * Output: the levels this kernel walks (the kernel's own mm_p?d_folded() says which of
 * p4d, pud and pmd it folds away: x86-64 with 4-level paging folds p4d, a 3-level arm64
 * kernel folds p4d and pud), one line per level walked, then the physical address:
 *   pid 123 va 0x7ffc12345678
 *   levels 4
 *   folded p4d
 *   pgd index 255 entry 0x0000000012345067
 *   pud ... / pmd ... / pte ...
 *   pa 0x0000000087654678 page 4096
 * or "not-present at <level>" when the walk stops. Indices come from each level's shift
 * and entry count (PGDIR_SHIFT .. PAGE_SHIFT, PTRS_PER_*), so an 8 KiB-page kernel
 * (Sunway: 1024 entries per table) prints its own. Builds on 4.19 and current kernels
 * (hwlab_compat.h).
 */
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "hwlab_compat.h"

static DEFINE_MUTEX(ptwalk_lock);
static pid_t ptwalk_pid;
static unsigned long ptwalk_va;
static bool ptwalk_set;

static void show_pa(struct seq_file *m, unsigned long pfn, unsigned long offset,
		    unsigned long size)
{
	seq_printf(m, "pa 0x%016llx page %lu\n",
		   ((unsigned long long)pfn << PAGE_SHIFT) + offset, size);
}

static void walk(struct seq_file *m, struct mm_struct *mm, unsigned long va)
{
	pgd_t *pgd;
	p4d_t *p4d;
	pud_t *pud;
	pmd_t *pmd;
	pte_t *ptep, pte;
	bool f4 = mm_p4d_folded(mm), f3 = mm_pud_folded(mm), f2 = mm_pmd_folded(mm);

	seq_printf(m, "levels %d\n", 5 - f4 - f3 - f2);
	if (f4 || f3 || f2)
		seq_printf(m, "folded%s%s%s\n", f4 ? " p4d" : "", f3 ? " pud" : "",
			   f2 ? " pmd" : "");

	/* A folded level's entry is the level above it: walked through, not printed. */
	pgd = pgd_offset(mm, va);
	seq_printf(m, "pgd index %lu entry 0x%016llx\n", (unsigned long)pgd_index(va),
		   (unsigned long long)pgd_val(*pgd));
	if (pgd_none(*pgd) || pgd_bad(*pgd)) {
		seq_puts(m, "not-present at pgd\n");
		return;
	}
	p4d = p4d_offset(pgd, va);
	if (!f4) {
		seq_printf(m, "p4d index %lu entry 0x%016llx\n",
			   HW_INDEX(va, P4D_SHIFT, PTRS_PER_P4D), (unsigned long long)p4d_val(*p4d));
		if (p4d_none(*p4d) || p4d_bad(*p4d)) {
			seq_puts(m, "not-present at p4d\n");
			return;
		}
	}
	pud = pud_offset(p4d, va);
	if (!f3) {
		seq_printf(m, "pud index %lu entry 0x%016llx\n",
			   HW_INDEX(va, PUD_SHIFT, PTRS_PER_PUD), (unsigned long long)pud_val(*pud));
		if (pud_none(*pud)) {
			seq_puts(m, "not-present at pud\n");
			return;
		}
		if (pud_leaf(*pud)) { /* a 1 GiB page on x86: the walk ends here */
			show_pa(m, pud_pfn(*pud), va & ~PUD_MASK, PUD_SIZE);
			return;
		}
	}
	pmd = pmd_offset(pud, va);
	if (!f2) {
		seq_printf(m, "pmd index %lu entry 0x%016llx\n",
			   HW_INDEX(va, PMD_SHIFT, PTRS_PER_PMD), (unsigned long long)pmd_val(*pmd));
		if (pmd_none(*pmd)) {
			seq_puts(m, "not-present at pmd\n");
			return;
		}
		if (pmd_leaf(*pmd)) { /* a huge page (THP or hugetlb): 2 MiB on x86 */
			show_pa(m, pmd_pfn(*pmd), va & ~PMD_MASK, PMD_SIZE);
			return;
		}
	}
	ptep = pte_offset_map(pmd, va);
	if (!ptep) { /* newer kernels: the table went away under us */
		seq_puts(m, "not-present at pmd\n");
		return;
	}
	pte = *ptep;
	pte_unmap(ptep);
	seq_printf(m, "pte index %lu entry 0x%016llx\n", HW_INDEX(va, PAGE_SHIFT, PTRS_PER_PTE),
		   (unsigned long long)pte_val(pte));
	if (!pte_present(pte)) {
		seq_puts(m, "not-present at pte\n");
		return;
	}
	show_pa(m, pte_pfn(pte), va & ~PAGE_MASK, PAGE_SIZE);
}

static int ptwalk_show(struct seq_file *m, void *v)
{
	struct task_struct *task;
	struct mm_struct *mm;
	struct pid *pid;

	mutex_lock(&ptwalk_lock);
	if (!ptwalk_set) {
		seq_puts(m, "error: write '<pid> <vaddr>' to /proc/ptwalk first\n");
		goto out;
	}
	seq_printf(m, "pid %d va 0x%lx\n", ptwalk_pid, ptwalk_va);
	pid = find_get_pid(ptwalk_pid);
	task = pid ? get_pid_task(pid, PIDTYPE_PID) : NULL;
	put_pid(pid);
	if (!task) {
		seq_printf(m, "error: no process %d\n", ptwalk_pid);
		goto out;
	}
	mm = get_task_mm(task);
	put_task_struct(task);
	if (!mm) {
		seq_printf(m, "error: process %d has no user address space\n", ptwalk_pid);
		goto out;
	}
	mmap_read_lock(mm); /* keeps the tables from being freed while we read them */
	walk(m, mm, ptwalk_va);
	mmap_read_unlock(mm);
	mmput(mm);
out:
	mutex_unlock(&ptwalk_lock);
	return 0;
}

static ssize_t ptwalk_write(struct file *f, const char __user *ubuf, size_t len, loff_t *off)
{
	char buf[64], *p, *va_s;
	int pid;
	unsigned long va;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	p = strim(buf);
	va_s = strpbrk(p, " \t");
	if (!va_s)
		return -EINVAL;
	*va_s++ = 0;
	va_s = skip_spaces(va_s);
	if (kstrtoint(p, 10, &pid) || kstrtoul(va_s, 0, &va))
		return -EINVAL;
	mutex_lock(&ptwalk_lock);
	ptwalk_pid = pid;
	ptwalk_va = va;
	ptwalk_set = true;
	mutex_unlock(&ptwalk_lock);
	return len;
}

static int ptwalk_open(struct inode *inode, struct file *file)
{
	return single_open(file, ptwalk_show, NULL);
}

HW_PROC_FILE(ptwalk_ops, ptwalk_open, ptwalk_write);

static int __init ptwalk_init(void)
{
	if (!proc_create("ptwalk", 0600, NULL, &ptwalk_ops))
		return -ENOMEM;
	pr_info("ptwalk: write '<pid> <vaddr>' to /proc/ptwalk, then read it\n");
	return 0;
}

static void __exit ptwalk_exit(void)
{
	remove_proc_entry("ptwalk", NULL);
}

module_init(ptwalk_init);
module_exit(ptwalk_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vmemlab: show a process's page-table walk, level by level");
