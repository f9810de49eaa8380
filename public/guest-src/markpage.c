/* markpage: pins one page, fills it with a marker and prints its virtual address, then
 * keeps the CPU busy (so the lab can sample this process's CR3) for N seconds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
    int secs = argc > 1 ? atoi(argv[1]) : 30;
    const char *tag = argc > 2 ? argv[2] : "VMEMLAB-MARK";
    unsigned char *p = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 1; }
    memset(p, 0, 4096);
    snprintf((char *)p, 64, "%s pid=%d", tag, (int)getpid());
    if (mlock(p, 4096) != 0) perror("mlock");
    printf("MARK va=0x%08lx pid=%d text=\"%s\"\n", (unsigned long)p, (int)getpid(), (char *)p);
    fflush(stdout);
    time_t end = time(0) + secs;
    volatile unsigned long spin = 0;
    while (time(0) < end) { for (int i = 0; i < 100000; i++) spin += p[i & 63]; }
    return 0;
}
