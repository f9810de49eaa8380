/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel APIs hw-lab's modules use, across 4.19-era kernels (what Sunway distributions
 * ship) and current ones. Each branch is chosen by what the kernel provides, by header
 * presence where a header marks the API, else by version:
 *   linux/pgtable.h        5.8   (before: asm/pgtable.h, through linux/mm.h)
 *   mmap_read_lock()       5.8   (before: down_read(&mm->mmap_sem)); linux/mmap_lock.h
 *   struct proc_ops        5.6   (before: struct file_operations for /proc files)
 *   p?d_leaf()             5.6   (before: pmd_trans_huge()/pmd_huge(), pud_huge())
 *   mm_p?d_folded()        5.0   (before: the __PAGETABLE_P?D_FOLDED markers)
 * tests/test_hw_modules_build.py compiles the modules against Debian's current headers
 * and against tests/shim419, a header tree with only the 4.19 API.
 */
#ifndef HWLAB_COMPAT_H
#define HWLAB_COMPAT_H

#include <linux/version.h>

#ifndef KERNEL_VERSION
#define KERNEL_VERSION(a, b, c) (((a) << 16) + ((b) << 8) + (c))
#endif

#if defined(__has_include)
#if __has_include(<linux/pgtable.h>)
#define HW_HAVE_LINUX_PGTABLE_H 1
#endif
#if __has_include(<linux/mmap_lock.h>)
#define HW_HAVE_MMAP_LOCK 1
#endif
#else
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 8, 0)
#define HW_HAVE_LINUX_PGTABLE_H 1
#define HW_HAVE_MMAP_LOCK 1
#endif
#endif

#include <linux/mm.h>
#ifdef HW_HAVE_LINUX_PGTABLE_H
#include <linux/pgtable.h>
#else
#include <asm/pgtable.h>
#endif
#include <linux/huge_mm.h>
#include <linux/hugetlb.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>

#ifndef HW_HAVE_MMAP_LOCK
static inline void mmap_read_lock(struct mm_struct *mm)
{
	down_read(&mm->mmap_sem);
}

static inline void mmap_read_unlock(struct mm_struct *mm)
{
	up_read(&mm->mmap_sem);
}
#endif

/* A /proc file with seq_file reads (and, when given, writes). */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 6, 0)
#define HW_PROC_FILE(name, open_fn, write_fn)                                             \
	static const struct proc_ops name = {                                             \
		.proc_open = open_fn,                                                     \
		.proc_read = seq_read,                                                    \
		.proc_write = write_fn,                                                   \
		.proc_lseek = seq_lseek,                                                  \
		.proc_release = single_release,                                           \
	}
#else
#define HW_PROC_FILE(name, open_fn, write_fn)                                             \
	static const struct file_operations name = {                                      \
		.owner = THIS_MODULE,                                                     \
		.open = open_fn,                                                          \
		.read = seq_read,                                                         \
		.write = write_fn,                                                        \
		.llseek = seq_lseek,                                                      \
		.release = single_release,                                                \
	}
#endif

/* Is this entry a leaf (a huge page) rather than a pointer to the next table? */
#ifndef pmd_leaf
#define pmd_leaf(pmd) (pmd_trans_huge(pmd) || pmd_huge(pmd))
#endif
#ifndef pud_leaf
#define pud_leaf(pud) pud_huge(pud)
#endif

/* Which levels this kernel folds away (compile time, or at boot: x86 without LA57). */
#ifndef mm_p4d_folded
#ifdef __PAGETABLE_P4D_FOLDED
#define mm_p4d_folded(mm) 1
#else
#define mm_p4d_folded(mm) 0
#endif
#endif
#ifndef mm_pud_folded
#ifdef __PAGETABLE_PUD_FOLDED
#define mm_pud_folded(mm) 1
#else
#define mm_pud_folded(mm) 0
#endif
#endif
#ifndef mm_pmd_folded
#ifdef __PAGETABLE_PMD_FOLDED
#define mm_pmd_folded(mm) 1
#else
#define mm_pmd_folded(mm) 0
#endif
#endif

/* A level's index of va from the kernel's own shift and entry count for that level
 * (PTRS_PER_P4D is 1 where p4d is folded, also when x86 folds it at boot). */
#define HW_INDEX(va, shift, ptrs) (((va) >> (shift)) & ((unsigned long)(ptrs) - 1))

#endif
