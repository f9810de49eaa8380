/* Runs inside the QEMU guest: asks /proc/ptwalk for the physical address of a few of its
 * own addresses and prints them beside what /proc/self/pagemap says, the kernel's
 * independent answer. The host-side test compares the two columns. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char bss_page[3 * 4096];

static int ask_ptwalk(uintptr_t va, uint64_t *pa, char *walk, size_t walk_len)
{
	char q[64];
	int fd = open("/proc/ptwalk", O_RDWR);
	if (fd < 0)
		return -1;
	int n = snprintf(q, sizeof q, "%d 0x%lx", getpid(), (unsigned long)va);
	if (write(fd, q, n) != n) {
		close(fd);
		return -1;
	}
	lseek(fd, 0, SEEK_SET);
	ssize_t got = read(fd, walk, walk_len - 1);
	close(fd);
	if (got < 0)
		return -1;
	walk[got] = 0;
	char *p = strstr(walk, "\npa 0x");
	if (!p)
		return 1; /* not present */
	*pa = strtoull(p + 4, NULL, 16);
	return 0;
}

static int ask_pagemap(uintptr_t va, uint64_t *pa)
{
	uint64_t e;
	int fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0 || pread(fd, &e, 8, (off_t)(va / 4096) * 8) != 8)
		return -1;
	close(fd);
	if (!(e >> 63))
		return 1; /* bit 63: present */
	*pa = ((e & ((1ull << 55) - 1)) << 12) | (va & 4095); /* bits 54:0: the PFN */
	return 0;
}

static void check(const char *name, void *p)
{
	char walk[1024];
	uint64_t a = 0, b = 0;
	uintptr_t va = (uintptr_t)p;
	int ra = ask_ptwalk(va, &a, walk, sizeof walk);
	int rb = ask_pagemap(va, &b);
	printf("%s", walk);
	printf("PTWALK-CHECK %s va=0x%lx ptwalk=%s0x%llx pagemap=%s0x%llx\n", name,
	       (unsigned long)va, ra ? "none:" : "", (unsigned long long)a, rb ? "none:" : "",
	       (unsigned long long)b);
	fflush(stdout);
}

int main(void)
{
	int local = 42;
	char *heap = malloc(256 * 1024);
	memset(heap, 1, 256 * 1024);
	bss_page[4096 + 123] = 1;

	/* a 2 MiB-aligned THP candidate: the walk should stop at the pmd */
	size_t len = 8u << 20;
	char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *huge = (char *)(((uintptr_t)raw + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
	madvise(huge, 4u << 20, MADV_HUGEPAGE);
	memset(huge, 2, 4u << 20);

	char *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(gone, 4096);

	check("stack", &local);
	check("heap", heap + 200 * 1024 + 17);
	check("bss", &bss_page[4096 + 123]);
	check("thp", huge + (1u << 20) + 4096 * 3 + 5);
	check("unmapped", gone);
	printf("PTWALK-CHECK-DONE\n");
	return 0;
}
