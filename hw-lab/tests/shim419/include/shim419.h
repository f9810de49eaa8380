/* A stand-in for a 4.19 kernel's headers: only the API hw-lab's modules touch, declared as
 * 4.19 declares it, and nothing newer (no linux/pgtable.h, no linux/mmap_lock.h, no
 * struct proc_ops, no p?d_leaf(), no mm_p?d_folded()). Page tables are those of a 4-level
 * port with 8 KiB pages that folds p4d with asm-generic/5level-fixup.h, as 4.19's arm64,
 * alpha and the sw_64 ports derived from it did. The CPU helpers are x86's (vmcall_bench).
 * Used only to compile the modules: tests/test_hw_modules_build.py. */
#ifndef SHIM419_H
#define SHIM419_H

typedef unsigned long size_t;
typedef long ssize_t;
typedef long long loff_t;
typedef _Bool bool;
typedef unsigned short umode_t;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef int pid_t;
typedef unsigned int gfp_t;
#define NULL ((void *)0)
#define true 1
#define false 0
#define __user
#define __init
#define __exit

#define ENOMEM 12
#define EFAULT 14
#define ENODEV 19
#define EINVAL 22

/* module.h, printk.h, moduleparam.h */
struct module;
extern struct module __this_module;
#define THIS_MODULE (&__this_module)
#define module_init(fn) int init_module(void) __attribute__((alias(#fn)));
#define module_exit(fn) void cleanup_module(void) __attribute__((alias(#fn)));
#define MODULE_LICENSE(s) extern int __shim_license
#define MODULE_DESCRIPTION(s) extern int __shim_description
#define MODULE_PARM_DESC(name, s) extern int __shim_parm_desc_##name
#define module_param(name, type, perm) extern int __shim_param_##name
int printk(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define pr_info(fmt, ...) printk(fmt, ##__VA_ARGS__)
#define pr_err(fmt, ...) printk(fmt, ##__VA_ARGS__)

/* kernel.h, string.h */
char *strim(char *s);
char *strpbrk(const char *cs, const char *ct);
char *skip_spaces(const char *s);
int kstrtoint(const char *s, unsigned int base, int *res);
int kstrtoul(const char *s, unsigned int base, unsigned long *res);
void cond_resched(void);
static inline u64 div_u64(u64 dividend, u32 divisor) { return dividend / divisor; }

/* mutex.h, rwsem.h */
struct mutex { int owner; };
#define DEFINE_MUTEX(name) struct mutex name = {0}
void mutex_lock(struct mutex *m);
void mutex_unlock(struct mutex *m);
struct rw_semaphore { long count; };
void down_read(struct rw_semaphore *sem);
void up_read(struct rw_semaphore *sem);

/* mm_types.h: 4.19 has mmap_sem, not mmap_lock */
struct mm_struct {
	struct rw_semaphore mmap_sem;
	void *pgd;
};

/* pid.h, sched/mm.h, sched/task.h */
struct pid;
struct task_struct;
enum pid_type { PIDTYPE_PID, PIDTYPE_TGID, PIDTYPE_PGID, PIDTYPE_SID, PIDTYPE_MAX };
struct pid *find_get_pid(pid_t nr);
void put_pid(struct pid *pid);
struct task_struct *get_pid_task(struct pid *pid, enum pid_type type);
struct mm_struct *get_task_mm(struct task_struct *task);
void mmput(struct mm_struct *mm);
void put_task_struct(struct task_struct *t);

/* uaccess.h */
unsigned long copy_from_user(void *to, const void __user *from, unsigned long n);

/* fs.h, seq_file.h, proc_fs.h: /proc files take a struct file_operations in 4.19 */
struct inode;
struct file;
struct seq_file;
struct file_operations {
	struct module *owner;
	loff_t (*llseek)(struct file *, loff_t, int);
	ssize_t (*read)(struct file *, char __user *, size_t, loff_t *);
	ssize_t (*write)(struct file *, const char __user *, size_t, loff_t *);
	int (*open)(struct inode *, struct file *);
	int (*release)(struct inode *, struct file *);
};
int seq_printf(struct seq_file *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void seq_puts(struct seq_file *m, const char *s);
int single_open(struct file *f, int (*show)(struct seq_file *, void *), void *data);
ssize_t seq_read(struct file *f, char __user *buf, size_t size, loff_t *ppos);
loff_t seq_lseek(struct file *f, loff_t offset, int whence);
int single_release(struct inode *inode, struct file *file);
struct proc_dir_entry;
struct proc_dir_entry *proc_create(const char *name, umode_t mode, struct proc_dir_entry *parent,
				   const struct file_operations *proc_fops);
void remove_proc_entry(const char *name, struct proc_dir_entry *parent);

/* mm.h, slab.h, gfp.h, sort.h */
#define GFP_KERNEL 0x6000c0u
void *kvmalloc_array(size_t n, size_t size, gfp_t flags);
void kvfree(const void *addr);
void sort(void *base, size_t num, size_t size, int (*cmp)(const void *, const void *),
	  void (*swap)(void *, void *, int));

/* asm/pgtable.h of a 4-level 8 KiB-page port (1024 entries per table) */
#define PAGE_SHIFT 13
#define PAGE_SIZE (1UL << PAGE_SHIFT)
#define PAGE_MASK (~(PAGE_SIZE - 1))
#define PTRS_PER_PTE 1024
#define PMD_SHIFT (PAGE_SHIFT + 10)
#define PMD_SIZE (1UL << PMD_SHIFT)
#define PMD_MASK (~(PMD_SIZE - 1))
#define PTRS_PER_PMD 1024
#define PUD_SHIFT (PMD_SHIFT + 10)
#define PUD_SIZE (1UL << PUD_SHIFT)
#define PUD_MASK (~(PUD_SIZE - 1))
#define PTRS_PER_PUD 1024
#define PGDIR_SHIFT (PUD_SHIFT + 10)
#define PGDIR_SIZE (1UL << PGDIR_SHIFT)
#define PGDIR_MASK (~(PGDIR_SIZE - 1))
#define PTRS_PER_PGD 1024
typedef struct { unsigned long pgd; } pgd_t;
typedef struct { unsigned long pud; } pud_t;
typedef struct { unsigned long pmd; } pmd_t;
typedef struct { unsigned long pte; } pte_t;
#define pgd_val(x) ((x).pgd)
#define pud_val(x) ((x).pud)
#define pmd_val(x) ((x).pmd)
#define pte_val(x) ((x).pte)
#define pgd_index(a) (((a) >> PGDIR_SHIFT) & (PTRS_PER_PGD - 1))
#define pgd_offset(mm, a) ((pgd_t *)(mm)->pgd + pgd_index(a))
int pgd_none(pgd_t pgd);
int pgd_bad(pgd_t pgd);
pud_t *pud_offset(pgd_t *pgd, unsigned long address);
int pud_none(pud_t pud);
unsigned long pud_pfn(pud_t pud);
pmd_t *pmd_offset(pud_t *pud, unsigned long address);
int pmd_none(pmd_t pmd);
unsigned long pmd_pfn(pmd_t pmd);
pte_t *pte_offset_map(pmd_t *pmd, unsigned long address);
#define pte_unmap(pte) ((void)(pte))
int pte_present(pte_t pte);
unsigned long pte_pfn(pte_t pte);

/* asm-generic/5level-fixup.h */
#define __ARCH_HAS_5LEVEL_HACK
#define __PAGETABLE_P4D_FOLDED 1
#define P4D_SHIFT PGDIR_SHIFT
#define P4D_SIZE PGDIR_SIZE
#define P4D_MASK PGDIR_MASK
#define PTRS_PER_P4D 1
#define p4d_t pgd_t
#define p4d_offset(pgd, start) (pgd)
#define p4d_none(p4d) 0
#define p4d_bad(p4d) 0
#define p4d_present(p4d) 1
#define p4d_val(p4d) pgd_val(p4d)

/* huge_mm.h, hugetlb.h */
int pmd_trans_huge(pmd_t pmd);
int pmd_huge(pmd_t pmd);
int pud_huge(pud_t pud);

/* x86: asm/processor.h, asm/cpufeature.h, asm/msr.h, asm/hypervisor.h, irqflags.h;
 * X86_VENDOR_HYGON arrives in 4.20 */
struct cpuinfo_x86 { unsigned char x86_vendor; };
extern struct cpuinfo_x86 boot_cpu_data;
#define X86_VENDOR_INTEL 0
#define X86_VENDOR_AMD 2
#define X86_FEATURE_HYPERVISOR (4 * 32 + 31)
int boot_cpu_has(int bit);
void cpuid(unsigned int op, unsigned int *eax, unsigned int *ebx, unsigned int *ecx,
	   unsigned int *edx);
u64 rdtsc_ordered(void);
enum x86_hypervisor_type {
	X86_HYPER_NATIVE = 0, X86_HYPER_VMWARE, X86_HYPER_MS_HYPERV, X86_HYPER_XEN_PV,
	X86_HYPER_XEN_HVM, X86_HYPER_KVM, X86_HYPER_JAILHOUSE,
};
bool hypervisor_is_type(enum x86_hypervisor_type type);
unsigned long arch_local_irq_save(void);
void arch_local_irq_restore(unsigned long flags);
#define local_irq_save(flags) ((flags) = arch_local_irq_save())
#define local_irq_restore(flags) arch_local_irq_restore(flags)

#endif
