/* ctxswitch: parent and child ping-pong one byte over two pipes. On one CPU every round
 * trip is two context switches (two address-space switches: mov cr3, which exits under
 * shadow paging); across CPUs it is wakeup latency. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cases.h"

struct pingpong {
	int wr, rd;
	int failed;
};

static void op_roundtrip(void *arg)
{
	struct pingpong *pp = arg;
	char b = 'x';
	if (write(pp->wr, &b, 1) != 1 || read(pp->rd, &b, 1) != 1)
		pp->failed = 1;
}

static int pin_to(int cpu)
{
#ifdef __linux__
	if (cpu < 0)
		return 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof set, &set);
#else
	(void)cpu;
	return 0;
#endif
}

static int first_allowed_cpu(void)
{
#ifdef __linux__
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		for (int i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &set))
				return i;
#endif
	return -1;
}

static int one(struct hw_ctx *c, const char *name, int cpu)
{
	int p2c[2], c2p[2];
	size_t n = c->quick ? 2000 : 20000;
	if (pipe(p2c) || pipe(c2p))
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		pin_to(cpu);
		close(p2c[1]);
		close(c2p[0]);
		char b;
		while (read(p2c[0], &b, 1) == 1)
			if (write(c2p[1], &b, 1) != 1)
				break;
		_exit(0);
	}
	close(p2c[0]);
	close(c2p[1]);
#ifdef __linux__
	cpu_set_t saved;
	sched_getaffinity(0, sizeof saved, &saved);
#endif
	int pinned = pin_to(cpu) == 0 && cpu >= 0;
	struct pingpong pp = {p2c[1], c2p[0], 0};
	struct hw_samples s;
	hw_samples_init(&s, n);
	hw_sample_each(op_roundtrip, &pp, 200, &s); /* both sides scheduled and warm */
	s.n = 0;
	hw_sample_each(op_roundtrip, &pp, n, &s);
	close(p2c[1]);
	close(c2p[0]);
	waitpid(pid, NULL, 0);
#ifdef __linux__
	sched_setaffinity(0, sizeof saved, &saved);
#endif

	hw_sub_begin(c, name);
	hw_json_open(c, "params", '{');
	hw_json_u64(c, "round_trips", n);
	hw_json_bool(c, "pinned_same_cpu", pinned);
	hw_json_close(c, '}');
	hw_json_open(c, "metrics", '[');
	if (!pp.failed)
		hw_metric(c, "round_trip", hw_timer_unit(), "pipe write+read round trip", s.v, s.n);
	hw_json_close(c, ']');
	hw_sub_end(c, pp.failed ? "error" : "ok", pp.failed ? "pipe read/write failed" : NULL);
	hw_samples_free(&s);
	return pp.failed ? -1 : 0;
}

int ctxswitch_run(struct hw_ctx *c)
{
	if (!c->subcase || !strcmp(c->subcase, "same_cpu"))
		if (one(c, "same_cpu", first_allowed_cpu()))
			return -1;
	if (!c->subcase || !strcmp(c->subcase, "any_cpu"))
		if (one(c, "any_cpu", -1))
			return -1;
	return 0;
}
