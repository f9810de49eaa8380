/* kvm_exits: a micro-VM through the KVM API, one fresh VM per sub-case.
 *
 * The guest runs in 64-bit long mode on page tables this file builds. Timing code runs at
 * CPL3 with IOPL=3 (port I/O allowed, rdtsc allowed): on software backends such as
 * kvm-pvm only CPL3 runs natively, and on VT-x/SVM CPL3 costs nothing extra. Only the
 * cr3_invlpg sub-case needs CPL0. The guest reads the TSC around each operation and stores
 * the deltas in its memory; the host reads them back and adds the KVM binary statistics
 * (KVM_GET_STATS_FD) before and after the run. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cases.h"

#ifdef HWLAB_X86 /* the guest code and the register setup are x86-64 */
#include <linux/kvm.h>

/* ---- guest physical layout (slot 0 is identity mapped with 2 MiB pages) */
#define SLOT0_SIZE (16ul << 20)
#define GPA_PML4 0x1000ul
#define GPA_PDPT 0x2000ul
#define GPA_PD0 0x3000ul     /* 0..1 GiB: slot 0 */
#define GPA_PD1 0x4000ul     /* 1..2 GiB: the touch region */
#define GPA_GDT 0x5000ul
#define GPA_CODE 0x10000ul
#define GPA_PTS 0x400000ul   /* 512 page tables for a 4 KiB-mapped touch region */
#define GPA_SAMPLES 0x800000ul
#define MAX_SAMPLES ((SLOT0_SIZE - GPA_SAMPLES) / 8)
#define GPA_TOUCH 0x40000000ul
#define MAX_TOUCH (1ul << 30)

#define PORT_USER 0x10
#define PORT_EVENTFD 0x20
#define PORT_DONE 0xf0

#define PTE_P 0x1ull
#define PTE_W 0x2ull
#define PTE_U 0x4ull
#define PTE_PS 0x80ull

/* ---- guest programs. Entry registers: rdi sample buffer, rsi count, rdx port,
 * r9 touch base, r10 stride. Each ends with OUT to PORT_DONE. Copied as bytes into
 * guest memory, so they sit in .rodata and use only relative jumps. */
extern const char g_io_start[], g_io_end[], g_touch_start[], g_touch_end[],
	g_cr3_start[], g_cr3_end[];
__asm__(".pushsection .rodata\n"
	".intel_syntax noprefix\n"
	"g_io_start:\n"
	"  mov r12, rdx\n"
	"  xor ecx, ecx\n"
	"1: cmp rcx, rsi\n"
	"  jae 9f\n"
	"  lfence\n rdtsc\n shl rdx, 32\n or rax, rdx\n mov r8, rax\n"
	"  mov rdx, r12\n"
	"  out dx, al\n"
	"  lfence\n rdtsc\n shl rdx, 32\n or rax, rdx\n sub rax, r8\n"
	"  mov [rdi + rcx*8], rax\n"
	"  inc rcx\n"
	"  jmp 1b\n"
	"9: mov edx, 0xf0\n out dx, al\n jmp 9b\n"
	"g_io_end:\n"
	"g_touch_start:\n"
	"  mov r14, rdi\n"
	"  xor r13d, r13d\n"
	"2: xor ecx, ecx\n"
	"  mov rbx, r9\n"
	"1: cmp rcx, rsi\n"
	"  jae 8f\n"
	"  lfence\n rdtsc\n shl rdx, 32\n or rax, rdx\n mov r8, rax\n"
	"  mov byte ptr [rbx], 1\n"
	"  lfence\n rdtsc\n shl rdx, 32\n or rax, rdx\n sub rax, r8\n"
	"  mov [r14], rax\n"
	"  add r14, 8\n"
	"  add rbx, r10\n"
	"  inc rcx\n"
	"  jmp 1b\n"
	"8: inc r13\n cmp r13, 2\n jb 2b\n"
	"9: mov edx, 0xf0\n out dx, al\n jmp 9b\n"
	"g_touch_end:\n"
	"g_cr3_start:\n"
	"  xor ecx, ecx\n"
	"1: cmp rcx, rsi\n"
	"  jae 9f\n"
	"  lfence\n rdtsc\n shl rdx, 32\n or rax, rdx\n mov r8, rax\n"
	"  mov rax, cr3\n mov cr3, rax\n invlpg [r9]\n"
	"  lfence\n rdtsc\n shl rdx, 32\n or rax, rdx\n sub rax, r8\n"
	"  mov [rdi + rcx*8], rax\n"
	"  inc rcx\n"
	"  jmp 1b\n"
	"9: mov edx, 0xf0\n out dx, al\n jmp 9b\n"
	"g_cr3_end:\n"
	".att_syntax prefix\n"
	".popsection\n");

enum prog { PROG_IO, PROG_TOUCH, PROG_CR3 };

struct subcase {
	const char *name;
	const char *what;
	enum prog prog;
	int cpl;
	int port;
	int ioeventfd;
	int guest_2m;
	int host_thp;
};

static const struct subcase subcases[] = {
	{"pio_user", "OUT to a port KVM does not handle: exit to this process and back",
	 PROG_IO, 3, PORT_USER, 0, 0, 0},
	{"pio_ioeventfd", "OUT to a port bound to an ioeventfd: completed inside the kernel",
	 PROG_IO, 3, PORT_EVENTFD, 1, 0, 0},
	{"touch_g4k_h4k", "guest 4 KiB pages, host 4 KiB pages: a fault per page on first touch",
	 PROG_TOUCH, 3, 0, 0, 0, 0},
	{"touch_g4k_hthp", "guest 4 KiB pages, host THP: one host fault per 2 MiB",
	 PROG_TOUCH, 3, 0, 0, 0, 1},
	{"touch_g2m_h4k", "guest 2 MiB pages, host 4 KiB pages: the host still faults per 4 KiB",
	 PROG_TOUCH, 3, 0, 0, 1, 0},
	{"touch_g2m_hthp", "guest 2 MiB pages, host THP: large in both dimensions",
	 PROG_TOUCH, 3, 0, 0, 1, 1},
	{"cr3_invlpg", "mov cr3 + invlpg at guest CPL0: exit under shadow paging (ept=0/npt=0), "
		       "not under nested paging",
	 PROG_CR3, 0, 0, 0, 0, 0},
};
#define NSUB (sizeof subcases / sizeof subcases[0])

/* ---- KVM binary statistics */

struct stats {
	int fd;
	struct kvm_stats_header h;
	char *desc;      /* num_desc descriptors, each sizeof(kvm_stats_desc) + name_size */
	size_t desc_sz;
	uint64_t *val;   /* first u64 of each cumulative counter */
};

static int stats_open(struct stats *s, int fd_owner)
{
	memset(s, 0, sizeof *s);
	s->fd = -1;
#ifdef KVM_GET_STATS_FD
	s->fd = ioctl(fd_owner, KVM_GET_STATS_FD, NULL);
	if (s->fd < 0)
		return -1;
	if (pread(s->fd, &s->h, sizeof s->h, 0) != (ssize_t)sizeof s->h)
		return -1;
	s->desc_sz = sizeof(struct kvm_stats_desc) + s->h.name_size;
	s->desc = calloc(s->h.num_desc, s->desc_sz);
	s->val = calloc(s->h.num_desc, sizeof(uint64_t));
	if (!s->desc || !s->val)
		return -1;
	if (pread(s->fd, s->desc, s->h.num_desc * s->desc_sz, s->h.desc_offset) !=
	    (ssize_t)(s->h.num_desc * s->desc_sz))
		return -1;
	return 0;
#else
	(void)fd_owner;
	return -1;
#endif
}

#ifdef KVM_GET_STATS_FD
static struct kvm_stats_desc *stats_desc(struct stats *s, uint32_t i)
{
	return (struct kvm_stats_desc *)(s->desc + i * s->desc_sz);
}
#endif

static void stats_read(struct stats *s, uint64_t *out)
{
#ifdef KVM_GET_STATS_FD
	for (uint32_t i = 0; i < s->h.num_desc; i++) {
		struct kvm_stats_desc *d = stats_desc(s, i);
		out[i] = 0;
		if (d->size >= 1)
			pread(s->fd, &out[i], 8, s->h.data_offset + d->offset);
	}
#else
	(void)s;
	(void)out;
#endif
}

/* Emit the cumulative counters that moved (and "exits", always). */
static void stats_emit(struct hw_ctx *c, const char *key, struct stats *s, const uint64_t *before)
{
	if (s->fd < 0)
		return;
	hw_json_open(c, key, '{');
#ifdef KVM_GET_STATS_FD
	uint64_t *now = calloc(s->h.num_desc, 8);
	stats_read(s, now);
	for (uint32_t i = 0; i < s->h.num_desc; i++) {
		struct kvm_stats_desc *d = stats_desc(s, i);
		if ((d->flags & KVM_STATS_TYPE_MASK) != KVM_STATS_TYPE_CUMULATIVE || d->size != 1)
			continue;
		if (now[i] != before[i] || !strcmp(d->name, "exits"))
			hw_json_u64(c, d->name, now[i] - before[i]);
	}
	free(now);
#else
	(void)before;
#endif
	hw_json_close(c, '}');
}

static void stats_close(struct stats *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->desc);
	free(s->val);
}

/* ---- the VM */

struct vm {
	int kvm, vm, vcpu;
	struct kvm_run *run;
	size_t run_sz;
	char *mem0;       /* slot 0 */
	char *touch;      /* slot 1, or NULL */
	size_t touch_bytes;
	int efd;
};

static volatile sig_atomic_t alarm_fired;
static void on_alarm(int sig)
{
	(void)sig;
	alarm_fired = 1;
}

const char *kvm_exits_unsupported(struct hw_ctx *ctx)
{
	(void)ctx;
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? "no /dev/kvm (KVM not loaded, or no hardware virtualization)"
				       : "/dev/kvm is not accessible (join the kvm group or run as root)";
	int v = ioctl(fd, KVM_GET_API_VERSION, 0);
	close(fd);
	return v == KVM_API_VERSION ? NULL : "unexpected KVM API version";
}

static void seg(struct kvm_segment *s, int code, int cpl)
{
	memset(s, 0, sizeof *s);
	s->base = 0;
	s->limit = 0xffffffff;
	s->present = 1;
	s->dpl = (uint8_t)cpl;
	s->s = 1;
	s->g = 1;
	if (code) {
		s->selector = (uint16_t)((cpl ? 0x20 : 0x08) | cpl);
		s->type = 11; /* execute/read, accessed */
		s->l = 1;
	} else {
		s->selector = (uint16_t)((cpl ? 0x18 : 0x10) | cpl);
		s->type = 3;  /* read/write, accessed */
		s->db = 1;
	}
}

static void build_tables(struct vm *v, const struct subcase *sc)
{
	uint64_t *pml4 = (uint64_t *)(v->mem0 + GPA_PML4);
	uint64_t *pdpt = (uint64_t *)(v->mem0 + GPA_PDPT);
	uint64_t *pd0 = (uint64_t *)(v->mem0 + GPA_PD0);
	uint64_t *pd1 = (uint64_t *)(v->mem0 + GPA_PD1);
	uint64_t f = PTE_P | PTE_W | PTE_U;
	pml4[0] = GPA_PDPT | f;
	pdpt[0] = GPA_PD0 | f;
	pdpt[1] = GPA_PD1 | f;
	for (uint64_t i = 0; i < SLOT0_SIZE >> 21; i++)
		pd0[i] = (i << 21) | f | PTE_PS;
	for (uint64_t i = 0; i < v->touch_bytes >> 21; i++) {
		uint64_t gpa = GPA_TOUCH + (i << 21);
		if (sc->guest_2m) {
			pd1[i] = gpa | f | PTE_PS;
		} else {
			uint64_t pt_gpa = GPA_PTS + i * 4096;
			uint64_t *pt = (uint64_t *)(v->mem0 + pt_gpa);
			for (uint64_t j = 0; j < 512; j++)
				pt[j] = (gpa + j * 4096) | f;
			pd1[i] = pt_gpa | f;
		}
	}
	/* A GDT matching the selectors in seg(): null, kernel code/data, user data/code. */
	uint64_t *gdt = (uint64_t *)(v->mem0 + GPA_GDT);
	gdt[1] = 0x00209a0000000000ull;
	gdt[2] = 0x00cf92000000ffffull;
	gdt[3] = 0x00cff2000000ffffull;
	gdt[4] = 0x0020fa0000000000ull;
}

static const char *vm_create(struct vm *v, const struct subcase *sc, size_t touch_bytes)
{
	memset(v, 0, sizeof *v);
	v->efd = -1;
	v->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (v->kvm < 0)
		return "cannot open /dev/kvm";
	v->vm = ioctl(v->kvm, KVM_CREATE_VM, 0);
	if (v->vm < 0)
		return "KVM_CREATE_VM failed";
	ioctl(v->vm, KVM_SET_TSS_ADDR, 0xfffbd000ul); /* needed by VMX for real mode; harmless */

	v->mem0 = mmap(NULL, SLOT0_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v->mem0 == MAP_FAILED)
		return "mmap of guest memory failed";
	memset(v->mem0, 0, SLOT0_SIZE); /* fault slot 0 in now: only the touch region is fresh */
	struct kvm_userspace_memory_region r0 = {
		.slot = 0, .guest_phys_addr = 0, .memory_size = SLOT0_SIZE,
		.userspace_addr = (uintptr_t)v->mem0};
	if (ioctl(v->vm, KVM_SET_USER_MEMORY_REGION, &r0) < 0)
		return "KVM_SET_USER_MEMORY_REGION (slot 0) failed";
	if (touch_bytes) {
		v->touch_bytes = touch_bytes;
		v->touch = hw_map(touch_bytes, sc->host_thp);
		if (!v->touch)
			return "mmap of the touch region failed: try --mem-mib with less";
		struct kvm_userspace_memory_region r1 = {
			.slot = 1, .guest_phys_addr = GPA_TOUCH, .memory_size = touch_bytes,
			.userspace_addr = (uintptr_t)v->touch};
		if (ioctl(v->vm, KVM_SET_USER_MEMORY_REGION, &r1) < 0)
			return "KVM_SET_USER_MEMORY_REGION (slot 1) failed";
	}
	if (sc->ioeventfd) {
		v->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		struct kvm_ioeventfd io = {.addr = (uint64_t)sc->port, .len = 1, .fd = v->efd,
					   .flags = KVM_IOEVENTFD_FLAG_PIO};
		if (v->efd < 0 || ioctl(v->vm, KVM_IOEVENTFD, &io) < 0)
			return "KVM_IOEVENTFD failed";
	}

	v->vcpu = ioctl(v->vm, KVM_CREATE_VCPU, 0);
	if (v->vcpu < 0)
		return "KVM_CREATE_VCPU failed";
	int sz = ioctl(v->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (sz <= 0)
		return "KVM_GET_VCPU_MMAP_SIZE failed";
	v->run_sz = (size_t)sz;
	v->run = mmap(NULL, v->run_sz, PROT_READ | PROT_WRITE, MAP_SHARED, v->vcpu, 0);
	if (v->run == MAP_FAILED)
		return "mmap of kvm_run failed";

	/* The guest CPUID must admit long mode or KVM refuses EFER.LME. */
	int n = 128;
	struct kvm_cpuid2 *cpuid = calloc(1, sizeof *cpuid + n * sizeof(struct kvm_cpuid_entry2));
	cpuid->nent = (uint32_t)n;
	if (ioctl(v->kvm, KVM_GET_SUPPORTED_CPUID, cpuid) == 0)
		ioctl(v->vcpu, KVM_SET_CPUID2, cpuid);
	free(cpuid);

	build_tables(v, sc);
	const char *s = sc->prog == PROG_IO ? g_io_start : sc->prog == PROG_TOUCH ? g_touch_start
										 : g_cr3_start;
	const char *e = sc->prog == PROG_IO ? g_io_end : sc->prog == PROG_TOUCH ? g_touch_end
									       : g_cr3_end;
	memcpy(v->mem0 + GPA_CODE, s, (size_t)(e - s));

	struct kvm_sregs sr;
	if (ioctl(v->vcpu, KVM_GET_SREGS, &sr) < 0)
		return "KVM_GET_SREGS failed";
	seg(&sr.cs, 1, sc->cpl);
	seg(&sr.ds, 0, sc->cpl);
	sr.es = sr.fs = sr.gs = sr.ss = sr.ds;
	sr.gdt.base = GPA_GDT;
	sr.gdt.limit = 5 * 8 - 1;
	sr.cr0 = 0x80050033; /* PG WP NE ET MP PE */
	sr.cr3 = GPA_PML4;
	sr.cr4 = 0x20;       /* PAE */
	sr.efer = 0x500;     /* LMA LME */
	if (ioctl(v->vcpu, KVM_SET_SREGS, &sr) < 0)
		return "KVM_SET_SREGS (64-bit long mode) failed";
	return NULL;
}

static void vm_destroy(struct vm *v)
{
	if (v->run && v->run != MAP_FAILED)
		munmap(v->run, v->run_sz);
	if (v->vcpu > 0)
		close(v->vcpu);
	if (v->efd >= 0)
		close(v->efd);
	if (v->vm > 0)
		close(v->vm);
	if (v->kvm > 0)
		close(v->kvm);
	if (v->mem0 && v->mem0 != MAP_FAILED)
		munmap(v->mem0, SLOT0_SIZE);
	hw_unmap(v->touch, v->touch_bytes);
}

/* Run until the guest writes PORT_DONE. Returns NULL or why it stopped. */
static const char *vm_run(struct vm *v, unsigned timeout_s, uint64_t *user_exits)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_alarm; /* no SA_RESTART: KVM_RUN returns EINTR */
	sigaction(SIGALRM, &sa, NULL);
	alarm_fired = 0;
	alarm(timeout_s);
	const char *why = NULL;
	static char buf[160];
	for (;;) {
		if (ioctl(v->vcpu, KVM_RUN, 0) < 0) {
			if (errno == EINTR && alarm_fired) {
				snprintf(buf, sizeof buf,
					 "timed out after %u s in KVM_RUN (guest hung; on kvm-pvm a "
					 "privileged instruction at CPL0 can do this)", timeout_s);
				why = buf;
				break;
			}
			if (errno == EINTR || errno == EAGAIN)
				continue;
			snprintf(buf, sizeof buf, "KVM_RUN failed: %s", strerror(errno));
			why = buf;
			break;
		}
		(*user_exits)++;
		struct kvm_run *r = v->run;
		if (r->exit_reason == KVM_EXIT_IO) {
			if (r->io.port == PORT_DONE)
				break;
			continue;
		}
		struct kvm_regs regs;
		ioctl(v->vcpu, KVM_GET_REGS, &regs);
		snprintf(buf, sizeof buf, "unexpected exit reason %u at guest rip 0x%llx%s",
			 r->exit_reason, (unsigned long long)regs.rip,
			 r->exit_reason == KVM_EXIT_SHUTDOWN ? " (shutdown: the guest faulted)" :
			 r->exit_reason == KVM_EXIT_FAIL_ENTRY ? " (VM entry failed)" : "");
		why = buf;
		break;
	}
	alarm(0);
	return why;
}

static int one(struct hw_ctx *c, const struct subcase *sc)
{
	struct vm v;
	size_t touch = 0;
	uint64_t count;
	if (sc->prog == PROG_TOUCH) {
		touch = c->quick ? (16ul << 20) : c->mem_bytes;
		if (touch > MAX_TOUCH)
			touch = MAX_TOUCH;
		touch &= ~((2ul << 20) - 1);
		if (touch < (2ul << 20))
			touch = 2ul << 20;
		count = touch / 4096;
	} else {
		count = c->kvm_iters ? c->kvm_iters : sc->prog == PROG_IO ? (c->quick ? 2000 : 65536)
									     : (c->quick ? 200 : 10000);
		if (count > MAX_SAMPLES)
			count = MAX_SAMPLES;
	}
	hw_progress("kvm_exits %s: %llu iterations", sc->name, (unsigned long long)count);

	hw_sub_begin(c, sc->name);
	hw_json_str(c, "what", sc->what);
	int depth = c->depth;
	const char *why = vm_create(&v, sc, touch);
	struct stats vs = {.fd = -1}, ms = {.fd = -1};
	uint64_t *vbefore = NULL, *mbefore = NULL, user_exits = 0;
	uint64_t ns0 = 0, ns1 = 0;
	if (!why) {
		struct kvm_regs regs = {0};
		regs.rip = GPA_CODE;
		regs.rsp = 0x7000;
		regs.rflags = 0x2 | (3u << 12); /* IOPL=3: port I/O allowed at CPL3 */
		regs.rdi = GPA_SAMPLES;
		regs.rsi = count;
		regs.rdx = (uint64_t)sc->port;
		regs.r9 = GPA_TOUCH;
		regs.r10 = 4096;
		if (ioctl(v.vcpu, KVM_SET_REGS, &regs) < 0)
			why = "KVM_SET_REGS failed";
	}
	if (!why) {
		if (stats_open(&vs, v.vcpu) == 0) {
			vbefore = calloc(vs.h.num_desc, 8);
			stats_read(&vs, vbefore);
		}
		if (stats_open(&ms, v.vm) == 0) {
			mbefore = calloc(ms.h.num_desc, 8);
			stats_read(&ms, mbefore);
		}
		ns0 = hw_mono_ns();
		why = vm_run(&v, c->timeout_s, &user_exits);
		ns1 = hw_mono_ns();
	}

	hw_json_open(c, "params", '{');
	hw_json_u64(c, "iterations", count);
	hw_json_u64(c, "guest_cpl", (uint64_t)sc->cpl);
	if (sc->prog == PROG_IO) {
		hw_json_u64(c, "port", (uint64_t)sc->port);
		hw_json_bool(c, "ioeventfd", sc->ioeventfd);
	}
	if (sc->prog == PROG_TOUCH) {
		hw_json_u64(c, "touch_bytes", touch);
		hw_json_u64(c, "guest_page_bytes", sc->guest_2m ? 2ul << 20 : 4096);
		hw_json_bool(c, "host_thp_requested", sc->host_thp);
		if (v.touch)
			hw_json_u64(c, "host_anon_huge_kib", hw_anon_huge_kib(v.touch));
	}
	hw_json_u64(c, "exits_to_userspace", user_exits);
	hw_json_num(c, "wall_s", (double)(ns1 - ns0) / 1e9);
	hw_json_close(c, '}');

	if (!why) {
		double *d = malloc((sc->prog == PROG_TOUCH ? 2 * count : count) * sizeof(double));
		const uint64_t *raw = (const uint64_t *)(v.mem0 + GPA_SAMPLES);
		size_t total = sc->prog == PROG_TOUCH ? 2 * count : count;
		for (size_t i = 0; i < total; i++)
			d[i] = (double)raw[i];
		hw_json_open(c, "metrics", '[');
		if (sc->prog == PROG_IO)
			hw_metric(c, "exit_round_trip", "tsc_cycles", "guest rdtsc;out;rdtsc", d, count);
		else if (sc->prog == PROG_TOUCH) {
			hw_metric(c, "first_touch", "tsc_cycles", "guest 4 KiB page written", d, count);
			hw_metric(c, "second_touch", "tsc_cycles", "guest 4 KiB page written",
				  d + count, count);
		} else
			hw_metric(c, "cr3_invlpg", "tsc_cycles", "guest mov cr3 + invlpg", d, count);
		hw_json_close(c, ']');
		struct hw_summary s = hw_summarize(d, sc->prog == PROG_TOUCH ? count : count);
		hw_progress("kvm_exits %s: median %.0f cycles (%s), %.2f s", sc->name, s.median,
			    sc->prog == PROG_TOUCH ? "first touch" : "per iteration",
			    (double)(ns1 - ns0) / 1e9);
		free(d);
		hw_json_open(c, "kvm_stats", '{');
		stats_emit(c, "vcpu", &vs, vbefore);
		stats_emit(c, "vm", &ms, mbefore);
		hw_json_close(c, '}');
	}
	hw_json_unwind(c, depth);
	hw_sub_end(c, why ? "error" : "ok", why);
	if (why)
		hw_progress("kvm_exits %s: %s", sc->name, why);
	free(vbefore);
	free(mbefore);
	stats_close(&vs);
	stats_close(&ms);
	vm_destroy(&v);
	return why ? -1 : 0;
}

int kvm_exits_run(struct hw_ctx *c)
{
	int failed = 0;
	for (size_t i = 0; i < NSUB; i++)
		if (!c->subcase || !strcmp(c->subcase, subcases[i].name))
			failed |= one(c, &subcases[i]) != 0;
	return failed ? -1 : 0;
}

#endif /* HWLAB_X86 */
