/* The recorder's test program for instructions the program skips: a loop whose conditional
 * jump always jumps back before the instructions after it, so they never run. Prints the
 * first skipped instruction's address; a trace of this program must hold no
 * fetch of it (hw-lab/tests/test_hw_trace_vmtrace.py). x86-64 only.
 *   skipped-branch [N]   (N iterations, default 1000) */
#include <stdio.h>
#include <stdlib.h>

extern char skipped_test[];

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000;
    long taken = 0, never = 0;
    printf("skipped %#lx\n", (unsigned long)skipped_test);
    fflush(stdout);
    /* Two conditional jumps to the same place, the second right after the first (as in
     * glibc's string loops): valgrind may join the two into one translation with one exit,
     * and then reported the second one's instructions as fetched whenever the first one
     * jumped. Here the first always jumps. */
    __asm__ volatile(
        "1:\n\t"
        "add $1, %[taken]\n\t"
        "sub $1, %[n]\n\t"
        "jz 3f\n\t"
        "cmp $0, %[n]\n\t"
        "jne 1b\n"                      /* n > 0 here: always jumps */
        ".globl skipped_test\n"
        "skipped_test:\n\t"
        "test %[n], %[n]\n\t"
        "je 1b\n\t"
        "add $1, %[never]\n\t"
        "jmp 1b\n"
        "3:\n"
        : [n] "+r"(n), [taken] "+r"(taken), [never] "+r"(never)
        :
        : "cc");
    return never != 0 || taken <= 0;
}
