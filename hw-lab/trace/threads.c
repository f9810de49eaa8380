/* A program with threads, for the recorder's tests: the main thread starts two threads in
 * turn, each writes then sums its own 64 KiB array; main waits for each before starting the
 * next, so the order of accesses is the same on every run. Prints the sums. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N (64 * 1024)

static void *work(void *arg)
{
    unsigned char *a = malloc(N);
    unsigned long seed = (unsigned long)arg, sum = 0;
    if (!a)
        return NULL;
    for (int i = 0; i < N; i += 64)
        a[i] = (unsigned char)(seed * 7 + (unsigned long)i);
    for (int i = 0; i < N; i += 64)
        sum += a[i];
    free(a);
    return (void *)sum;
}

int main(void)
{
    for (unsigned long t = 1; t <= 2; t++) {
        pthread_t th;
        void *r;
        if (pthread_create(&th, NULL, work, (void *)t) != 0 || pthread_join(th, &r) != 0) {
            perror("pthread");
            return 1;
        }
        printf("thread %lu: sum %lu\n", t, (unsigned long)r);
    }
    return 0;
}
