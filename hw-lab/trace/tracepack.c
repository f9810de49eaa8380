/* tracepack: valgrind lackey's memory log in, a vmemlab trace body out.
 *
 *   valgrind --tool=lackey --trace-mem=yes --log-fd=N PROGRAM | tracepack [--limit N] > body
 *
 * Reads lackey's text (one "I  addr,size", " L addr,size", " S addr,size" or
 * " M addr,size" line per access, valgrind's own "==pid==" lines between them) and writes
 * the trace body records of wasm-core/docs/replay.md ("The trace format"), uncompressed,
 * ending with the end record. hw-lab/run trace compresses them and writes the header.
 * At the end one JSON line goes to stderr: the counts, the distinct pages, whether the
 * limit cut the program short, and what valgrind said about how the program ended.
 * Memory holds the set of pages touched, never the trace. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_SHIFT 12
#define CODE_ESCAPE 30u
#define CODE_CONTROL 31u

static uint8_t outbuf[1 << 20];
static size_t outlen;

static void flush_out(void)
{
    if (outlen && fwrite(outbuf, 1, outlen, stdout) != outlen) {
        fprintf(stderr, "tracepack: cannot write the trace body: %s\n", strerror(errno));
        exit(1);
    }
    outlen = 0;
}

static inline void put(uint8_t b)
{
    if (outlen == sizeof outbuf)
        flush_out();
    outbuf[outlen++] = b;
}

static inline void put_varint(uint64_t v)
{
    while (v >= 0x80) {
        put((uint8_t)(v | 0x80));
        v >>= 7;
    }
    put((uint8_t)v);
}

static inline uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* The distinct pages: open addressing on page + 1. */
static uint64_t *set;
static uint64_t set_cap, set_used;

static void set_add(uint64_t page)
{
    if ((set_used + 1) * 2 > set_cap) {
        uint64_t ncap = set_cap ? set_cap * 2 : 4096;
        uint64_t *n = calloc(ncap, sizeof *n);
        if (!n) {
            fprintf(stderr, "tracepack: out of memory for the set of pages (%llu pages)\n", (unsigned long long)set_used);
            exit(1);
        }
        for (uint64_t i = 0; i < set_cap; i++)
            if (set[i]) {
                uint64_t j = (set[i] * 0x9E3779B97F4A7C15ull >> 20) & (ncap - 1);
                while (n[j])
                    j = (j + 1) & (ncap - 1);
                n[j] = set[i];
            }
        free(set);
        set = n;
        set_cap = ncap;
    }
    uint64_t key = page + 1, j = (key * 0x9E3779B97F4A7C15ull >> 20) & (set_cap - 1);
    while (set[j] && set[j] != key)
        j = (j + 1) & (set_cap - 1);
    if (!set[j]) {
        set[j] = key;
        set_used++;
    }
}

static uint64_t last_page[2], last_off[2], last_seen[2] = {~0ull, ~0ull};
static uint64_t counts[4], accesses;

static void emit(unsigned kind, uint64_t addr)
{
    unsigned s = kind == 2;
    uint64_t page = addr >> PAGE_SHIFT, off = addr & ((1u << PAGE_SHIFT) - 1);
    int64_t dp = (int64_t)(page - last_page[s]);
    uint64_t od = zigzag((int64_t)off - (int64_t)last_off[s]);
    uint8_t tag = (uint8_t)(kind | (dp ? 4u : 0u) | ((od < CODE_ESCAPE ? (unsigned)od : CODE_ESCAPE) << 3));
    put(tag);
    if (dp)
        put_varint(zigzag(dp));
    if (od >= CODE_ESCAPE)
        put_varint(od);
    last_page[s] = page;
    last_off[s] = off;
    if (page != last_seen[s]) {
        set_add(page);
        last_seen[s] = page;
    }
    counts[kind]++;
    accesses++;
}

static int hexdig(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Writes s as a JSON string to stderr. */
static void json_str(const char *s)
{
    fputc('"', stderr);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(stderr, "\\%c", c);
        else if (c < 0x20)
            fprintf(stderr, "\\u%04x", c);
        else
            fputc(c, stderr);
    }
    fputc('"', stderr);
}

int main(int argc, char **argv)
{
    uint64_t limit = 0;
    FILE *in = stdin;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
            char *end;
            limit = strtoull(argv[++i], &end, 10);
            if (*end || !limit) {
                fprintf(stderr, "tracepack: --limit needs a positive whole number\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--input") && i + 1 < argc) {
            in = fopen(argv[++i], "r");
            if (!in) {
                fprintf(stderr, "tracepack: cannot open %s: %s\n", argv[i], strerror(errno));
                return 2;
            }
        } else {
            fprintf(stderr, "usage: tracepack [--limit N] [--input LACKEY_LOG] > body   (lackey log on stdin)\n");
            return 2;
        }
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    uint64_t other = 0, bad = 0;
    long exit_code = -1, signal_no = -1;
    bool limited = false, banner = false;
    char last_msg[300] = "", command[1024] = "";
    while ((len = getline(&line, &cap, in)) > 0) {
        unsigned kind;
        const char *p;
        if (line[0] == 'I' && line[1] == ' ' && line[2] == ' ') {
            kind = 2;
            p = line + 3;
        } else if (line[0] == ' ' && line[2] == ' ' && (line[1] == 'L' || line[1] == 'S' || line[1] == 'M')) {
            kind = line[1] == 'L' ? 0 : line[1] == 'S' ? 1 : 3;
            p = line + 3;
        } else {
            if (line[0] == '=' && line[1] == '=') {
                const char *msg = strstr(line + 2, "== ");
                msg = msg ? msg + 3 : line;
                if (strstr(msg, "Lackey, an example Valgrind tool"))
                    banner = true;
                const char *ec = strstr(msg, "Exit code:");
                if (ec)
                    exit_code = strtol(ec + 10, NULL, 10);
                static const char term[] = "Process terminating with default action of signal ";
                const char *sg = strstr(msg, term);
                if (sg)
                    signal_no = strtol(sg + sizeof term - 1, NULL, 10);
                static const char cmd[] = "Command: ";
                if (!strncmp(msg, cmd, sizeof cmd - 1) && !command[0]) {
                    size_t n = strcspn(msg + sizeof cmd - 1, "\n");
                    if (n >= sizeof command)
                        n = sizeof command - 1;
                    memcpy(command, msg + sizeof cmd - 1, n);
                    command[n] = 0;
                }
                size_t n = strcspn(msg, "\n");
                if (n && !ec) {
                    if (n >= sizeof last_msg)
                        n = sizeof last_msg - 1;
                    memcpy(last_msg, msg, n);
                    last_msg[n] = 0;
                }
            }
            other++;
            continue;
        }
        uint64_t addr = 0;
        int digits = 0, d;
        while ((d = hexdig((unsigned char)*p)) >= 0 && digits < 17) {
            addr = addr << 4 | (uint64_t)d;
            p++;
            digits++;
        }
        if (!digits || digits > 16 || *p != ',') {
            bad++;
            continue;
        }
        emit(kind, addr);
        if (limit && accesses == limit) {
            limited = true;
            break;
        }
    }
    free(line);
    put((uint8_t)(CODE_CONTROL << 3));
    put_varint(accesses);
    flush_out();
    if (fflush(stdout) != 0) {
        fprintf(stderr, "tracepack: cannot write the trace body: %s\n", strerror(errno));
        return 1;
    }
    fprintf(stderr, "{\"accesses\":%llu,\"counts\":{\"load\":%llu,\"store\":%llu,\"fetch\":%llu,\"modify\":%llu},"
                    "\"pages\":%llu,\"limit_reached\":%s,\"lackey_banner\":%s,\"exit_code\":",
            (unsigned long long)accesses, (unsigned long long)counts[0], (unsigned long long)counts[1],
            (unsigned long long)counts[2], (unsigned long long)counts[3], (unsigned long long)set_used,
            limited ? "true" : "false", banner ? "true" : "false");
    if (exit_code >= 0) fprintf(stderr, "%ld", exit_code); else fputs("null", stderr);
    fputs(",\"fatal_signal\":", stderr);
    if (signal_no >= 0) fprintf(stderr, "%ld", signal_no); else fputs("null", stderr);
    fprintf(stderr, ",\"other_lines\":%llu,\"bad_lines\":%llu,\"last_message\":", (unsigned long long)other,
            (unsigned long long)bad);
    json_str(last_msg);
    fputs(",\"command\":", stderr);
    json_str(command);
    fputs("}\n", stderr);
    return 0;
}
