/* For test_replay_progress.py, preloaded into vmsim (LD_PRELOAD): the monotonic clock says
 * 0 at its first reading and FAKECLOCK_STEP seconds more at each one after (default 1), so
 * that a replay of a moment's work reads as one taking that long, the same at every run.
 * Every other clock is the real one. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long readings;

int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (id != CLOCK_MONOTONIC)
        return (int)syscall(SYS_clock_gettime, id, ts);
    const char *s = getenv("FAKECLOCK_STEP");
    long step = s ? atol(s) : 1;
    ts->tv_sec = step * __atomic_fetch_add(&readings, 1, __ATOMIC_SEQ_CST);
    ts->tv_nsec = 0;
    return 0;
}
