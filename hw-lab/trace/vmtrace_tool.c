/* vmtrace: a valgrind tool that records every memory access of a program straight into the
 * body of a vmemlab trace (wasm-core/docs/replay.md, "The trace format"), uncompressed.
 *
 *   VALGRIND_LIB=build/vgtool valgrind --tool=vmtrace --body-fd=N --info-fd=M [--limit=N] PROGRAM
 *
 * It sees the same accesses as lackey --trace-mem=yes, in the same order: one instruction
 * fetch per guest instruction, then its loads and stores; a store that comes right after
 * a load of the same size from the same address expression is one modify, as lackey
 * merges them (add [m], r; a compare-and-swap); a dirty helper's memory effect is a load,
 * a store or a modify. Instead of printing a line per access through valgrind's
 * printf (lackey), each translated block calls one small helper per group of up to four
 * accesses, which appends them to a buffer; a full buffer is encoded (page deltas and
 * offsets as varints) and written to --body-fd in one write.
 *
 * --info-fd gets text lines for hw-lab/run: "progress N" about once a second (N accesses
 * so far), then one JSON line at the end: the counts, the distinct pages, the threads, the
 * forks, whether the limit, an exec or the end of the program ended the body, and the
 * program's exit code. valgrind runs one thread at a time, so the accesses of all threads
 * are one stream in the order they ran (which thread runs after a system call is up to
 * timing, as under lackey). A child made by fork is not recorded (it drops
 * what it inherited and closes both descriptors); when the program execs another program
 * the body ends there, as the program valgrind started is gone. */
#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "libvex_ir.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_vki.h"
#include "pub_tool_vkiscnums.h"

/* valgrind's core moves a descriptor above the range the program may use (as it does with
 * --log-fd), so that the program cannot close or reuse it. Not in the tool headers. */
extern Int VG_(safe_fd)(Int oldfd);

#define PAGE_SHIFT 12
#define CODE_ESCAPE 30u
#define CODE_CONTROL 31u

enum { K_LOAD = 0, K_STORE = 1, K_FETCH = 2, K_MODIFY = 3 };

static Long clo_body_fd = -1, clo_info_fd = -1, clo_limit = 0;
static Bool clo_text = False;       /* lackey's text instead of the body: the tests compare them */

/* ---- the recording side: buffer, encoder, distinct pages ---- */

#define BUFN (1 << 16)
static Addr acc_addr[BUFN];
static UChar acc_kind[BUFN];
static UInt nbuf;

static UChar outbuf[1 << 20];
static UInt outlen;

static Bool active = True;          /* False in a forked child and after the body ended */
static ULong total, counts[4];
static ULong last_page[2], last_off[2], last_seen[2] = {~0ULL, ~0ULL};
static UInt threads, forks;         /* threads: valgrind announces the first one too */
static UInt last_progress_ms;
static Bool limit_reached, ended_at_exec, write_failed;

static void write_all(Int fd, const void *p, UInt n)
{
    const UChar *b = p;
    while (n && !write_failed) {
        Int w = VG_(write)(fd, b, n);
        if (w <= 0) {
            /* hw-lab/run is gone or the pipe broke: stop recording, let the program end. */
            write_failed = True;
            active = False;
            return;
        }
        b += w;
        n -= (UInt)w;
    }
}

static void flush_out(void)
{
    if (outlen)
        write_all((Int)clo_body_fd, outbuf, outlen);
    outlen = 0;
}

static inline void put(UChar b)
{
    if (UNLIKELY(outlen == sizeof outbuf))
        flush_out();
    outbuf[outlen++] = b;
}

static inline void put_varint(ULong v)
{
    while (v >= 0x80) {
        put((UChar)(v | 0x80));
        v >>= 7;
    }
    put((UChar)v);
}

static inline ULong zigzag(Long v)
{
    return ((ULong)v << 1) ^ (ULong)(v >> 63);
}

/* The distinct pages: open addressing on page + 1. */
static ULong *set;
static ULong set_cap, set_used;

static void set_add(ULong page)
{
    if ((set_used + 1) * 2 > set_cap) {
        ULong ncap = set_cap ? set_cap * 2 : 65536;
        ULong *n = VG_(calloc)("vmtrace.pages", ncap, sizeof *n);
        for (ULong i = 0; i < set_cap; i++)
            if (set[i]) {
                ULong j = (set[i] * 0x9E3779B97F4A7C15ULL >> 20) & (ncap - 1);
                while (n[j])
                    j = (j + 1) & (ncap - 1);
                n[j] = set[i];
            }
        if (set)
            VG_(free)(set);
        set = n;
        set_cap = ncap;
    }
    ULong key = page + 1, j = (key * 0x9E3779B97F4A7C15ULL >> 20) & (set_cap - 1);
    while (set[j] && set[j] != key)
        j = (j + 1) & (set_cap - 1);
    if (!set[j]) {
        set[j] = key;
        set_used++;
    }
}

/* Encodes n buffered accesses. Most are one byte (same page, offset within +-14 of the
 * stream's last one): that case is written without any other work. The streams' state and
 * the counts live in locals while the loop runs: stores through the output pointer could
 * otherwise change globals as far as the compiler knows, and it would reload them after
 * every byte. */
static void encode(UInt n)
{
    UChar *o = outbuf + outlen, *lim = outbuf + sizeof outbuf - 32;
    ULong lp[2] = {last_page[0], last_page[1]}, lo[2] = {last_off[0], last_off[1]};
    ULong seen[2] = {last_seen[0], last_seen[1]};
    ULong c[4] = {0, 0, 0, 0};
    for (UInt i = 0; i < n; i++) {
        if (UNLIKELY(o > lim)) {
            outlen = (UInt)(o - outbuf);
            flush_out();
            o = outbuf + outlen;
        }
        UInt kind = acc_kind[i], s = kind == K_FETCH;
        Addr a = acc_addr[i];
        ULong page = a >> PAGE_SHIFT, off = a & ((1u << PAGE_SHIFT) - 1);
        Long dp = (Long)(page - lp[s]);
        ULong od = zigzag((Long)off - (Long)lo[s]);
        c[kind]++;
        lo[s] = off;
        if (LIKELY(!dp && od < CODE_ESCAPE)) {
            *o++ = (UChar)(kind | (UInt)od << 3);
            continue;
        }
        *o++ = (UChar)(kind | (dp ? 4u : 0u) | ((od < CODE_ESCAPE ? (UInt)od : CODE_ESCAPE) << 3));
        if (dp) {
            ULong v = zigzag(dp);
            while (v >= 0x80) {
                *o++ = (UChar)(v | 0x80);
                v >>= 7;
            }
            *o++ = (UChar)v;
            lp[s] = page;
        }
        if (od >= CODE_ESCAPE) {
            ULong v = od;
            while (v >= 0x80) {
                *o++ = (UChar)(v | 0x80);
                v >>= 7;
            }
            *o++ = (UChar)v;
        }
        if (page != seen[s]) {
            set_add(page);
            seen[s] = page;
        }
    }
    outlen = (UInt)(o - outbuf);
    for (Int s = 0; s < 2; s++) {
        last_page[s] = lp[s];
        last_off[s] = lo[s];
        last_seen[s] = seen[s];
    }
    for (Int k = 0; k < 4; k++)
        counts[k] += c[k];
}

static void info_line(const HChar *line)
{
    write_all((Int)clo_info_fd, line, (UInt)VG_(strlen)(line));
}

static void write_summary(Int exit_code, Bool have_exit)
{
    HChar line[600];
    VG_(snprintf)(line, sizeof line,
                  "{\"accesses\":%llu,\"counts\":{\"load\":%llu,\"store\":%llu,\"fetch\":%llu,\"modify\":%llu},"
                  "\"pages\":%llu,\"limit_reached\":%s,\"ended_at_exec\":%s,\"threads\":%u,\"forks\":%u,"
                  "\"write_failed\":%s,\"exit_code\":",
                  total, counts[K_LOAD], counts[K_STORE], counts[K_FETCH], counts[K_MODIFY], set_used,
                  limit_reached ? "true" : "false", ended_at_exec ? "true" : "false", threads, forks,
                  write_failed ? "true" : "false");
    HChar tail[40];
    if (have_exit)
        VG_(snprintf)(tail, sizeof tail, "%d}\n", exit_code);
    else
        VG_(strcpy)(tail, "null}\n");
    info_line(line);
    info_line(tail);
}

/* Ends the body: the end record with the number of accesses, then the summary line. */
static void end_body(Int exit_code, Bool have_exit)
{
    if (!clo_text) {
        put((UChar)(CODE_CONTROL << 3));
        put_varint(total);
    }
    flush_out();
    write_summary(exit_code, have_exit);
    active = False;
}

/* Encodes what the buffer holds; stops the program at the limit. */
static void drain(void)
{
    UInt n = nbuf;
    nbuf = 0;
    if (!active)
        return;
    if (clo_limit && total + n >= (ULong)clo_limit) {
        n = (UInt)((ULong)clo_limit - total);
        limit_reached = True;
    }
    encode(n);
    total += n;
    if (limit_reached) {
        end_body(0, False);
        VG_(exit)(0);
    }
    UInt now = VG_(read_millisecond_timer)();
    if (now - last_progress_ms >= 1000) {
        HChar line[40];
        VG_(snprintf)(line, sizeof line, "progress %llu\n", total);
        info_line(line);
        last_progress_ms = now;
    }
}

/* The helpers the instrumented code calls: up to four accesses, their kinds two bits each. */
static void rec1(HWord a, HWord k)
{
    if (UNLIKELY(nbuf + 1 > BUFN))
        drain();
    acc_addr[nbuf] = a;
    acc_kind[nbuf] = (UChar)k;
    nbuf += 1;
}

static void rec2(HWord a, HWord b, HWord k)
{
    if (UNLIKELY(nbuf + 2 > BUFN))
        drain();
    UInt i = nbuf;
    acc_addr[i] = a;
    acc_addr[i + 1] = b;
    acc_kind[i] = (UChar)(k & 3);
    acc_kind[i + 1] = (UChar)(k >> 2 & 3);
    nbuf = i + 2;
}

static void rec3(HWord a, HWord b, HWord c, HWord k)
{
    if (UNLIKELY(nbuf + 3 > BUFN))
        drain();
    UInt i = nbuf;
    acc_addr[i] = a;
    acc_addr[i + 1] = b;
    acc_addr[i + 2] = c;
    acc_kind[i] = (UChar)(k & 3);
    acc_kind[i + 1] = (UChar)(k >> 2 & 3);
    acc_kind[i + 2] = (UChar)(k >> 4 & 3);
    nbuf = i + 3;
}

static void rec4(HWord a, HWord b, HWord c, HWord d, HWord k)
{
    if (UNLIKELY(nbuf + 4 > BUFN))
        drain();
    UInt i = nbuf;
    acc_addr[i] = a;
    acc_addr[i + 1] = b;
    acc_addr[i + 2] = c;
    acc_addr[i + 3] = d;
    acc_kind[i] = (UChar)(k & 3);
    acc_kind[i + 1] = (UChar)(k >> 2 & 3);
    acc_kind[i + 2] = (UChar)(k >> 4 & 3);
    acc_kind[i + 3] = (UChar)(k >> 6 & 3);
    nbuf = i + 4;
}

/* --text=yes: lackey's lines ("I  addr,size", " L addr,size", ...), one per access, with the
 * size, so that a test can compare them with lackey's log line for line. */
static void rec_text(HWord a, HWord ks)
{
    static const HChar head[4][3] = {" L ", " S ", "I  ", " M "};
    if (!active)
        return;
    if (clo_limit && total == (ULong)clo_limit) {
        limit_reached = True;
        flush_out();
        write_summary(0, False);
        VG_(exit)(0);
    }
    if (UNLIKELY(outlen + 64 > sizeof outbuf))
        flush_out();
    UInt kind = (UInt)(ks & 3);
    HChar tmp[24];
    Int n = 0;
    ULong v = a;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    while (n < 8)
        tmp[n++] = '0';
    VG_(memcpy)(outbuf + outlen, head[kind], 3);
    outlen += 3;
    while (n)
        outbuf[outlen++] = (UChar)tmp[--n];
    outlen += (UInt)VG_(sprintf)((HChar *)outbuf + outlen, ",%lu\n", (UWord)(ks >> 2));
    counts[kind]++;
    total++;
}

/* ---- instrumentation: the events of a block, in lackey's order ---- */

#define N_EVENTS 4

typedef struct {
    UInt kind;
    IRExpr *addr;
    Int size;
    IRExpr *guard;      /* NULL: always */
} Event;

static Event events[N_EVENTS];
static Int events_used;

/* One call per run of unguarded events (up to four), one per guarded event. */
static void flush_events(IRSB *sb)
{
    Int i = 0;
    if (clo_text) {
        for (; i < events_used; i++) {
            IRDirty *di = unsafeIRDirty_0_N(0, "vmtrace_rec_text", VG_(fnptr_to_fnentry)(rec_text),
                                            mkIRExprVec_2(events[i].addr,
                                                          mkIRExpr_HWord(events[i].kind | (HWord)events[i].size << 2)));
            if (events[i].guard)
                di->guard = events[i].guard;
            addStmtToIRSB(sb, IRStmt_Dirty(di));
        }
        events_used = 0;
        return;
    }
    while (i < events_used) {
        Int j = i;
        if (!events[i].guard)
            while (j + 1 < events_used && !events[j + 1].guard)
                j++;
        Int n = j - i + 1;
        HWord k = 0;
        for (Int e = 0; e < n; e++)
            k |= (HWord)events[i + e].kind << (2 * e);
        IRExpr *kk = mkIRExpr_HWord(k);
        IRExpr **argv;
        const HChar *name;
        void *fn;
        switch (n) {
        case 1: argv = mkIRExprVec_2(events[i].addr, kk); name = "vmtrace_rec1"; fn = rec1; break;
        case 2: argv = mkIRExprVec_3(events[i].addr, events[i + 1].addr, kk); name = "vmtrace_rec2"; fn = rec2; break;
        case 3:
            argv = mkIRExprVec_4(events[i].addr, events[i + 1].addr, events[i + 2].addr, kk);
            name = "vmtrace_rec3"; fn = rec3; break;
        default:
            argv = mkIRExprVec_5(events[i].addr, events[i + 1].addr, events[i + 2].addr, events[i + 3].addr, kk);
            name = "vmtrace_rec4"; fn = rec4; break;
        }
        IRDirty *di = unsafeIRDirty_0_N(0, name, VG_(fnptr_to_fnentry)(fn), argv);
        if (events[i].guard)
            di->guard = events[i].guard;
        addStmtToIRSB(sb, IRStmt_Dirty(di));
        i = j + 1;
    }
    events_used = 0;
}

static void add_event(IRSB *sb, UInt kind, IRExpr *addr, Int size, IRExpr *guard)
{
    if (events_used == N_EVENTS)
        flush_events(sb);
    events[events_used].kind = kind;
    events[events_used].addr = addr;
    events[events_used].size = size;
    events[events_used].guard = guard;
    events_used++;
}

/* A store right after an unguarded load of the same size from the same address is one
 * modify, as lackey counts it. */
static void add_store(IRSB *sb, IRExpr *addr, Int size)
{
    if (events_used > 0) {
        Event *last = &events[events_used - 1];
        if (last->kind == K_LOAD && last->size == size && !last->guard && eqIRAtom(last->addr, addr)) {
            last->kind = K_MODIFY;
            return;
        }
    }
    add_event(sb, K_STORE, addr, size, NULL);
}

static IRSB *vt_instrument(VgCallbackClosure *closure, IRSB *sbIn, const VexGuestLayout *layout,
                           const VexGuestExtents *vge, const VexArchInfo *archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
    (void)closure; (void)layout; (void)vge; (void)archinfo_host;
    if (gWordTy != hWordTy)
        VG_(tool_panic)("host/guest word size mismatch");
    IRTypeEnv *tyenv = sbIn->tyenv;
    IRSB *sbOut = deepCopyIRSBExceptStmts(sbIn);
    Int i = 0;
    while (i < sbIn->stmts_used && sbIn->stmts[i]->tag != Ist_IMark)
        addStmtToIRSB(sbOut, sbIn->stmts[i++]);
    events_used = 0;
    for (; i < sbIn->stmts_used; i++) {
        IRStmt *st = sbIn->stmts[i];
        if (!st || st->tag == Ist_NoOp)
            continue;
        switch (st->tag) {
        case Ist_IMark:
            add_event(sbOut, K_FETCH, mkIRExpr_HWord((HWord)st->Ist.IMark.addr), (Int)st->Ist.IMark.len, NULL);
            break;
        case Ist_WrTmp: {
            IRExpr *data = st->Ist.WrTmp.data;
            if (data->tag == Iex_Load)
                add_event(sbOut, K_LOAD, data->Iex.Load.addr, sizeofIRType(data->Iex.Load.ty), NULL);
            break;
        }
        case Ist_Store:
            add_store(sbOut, st->Ist.Store.addr, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.Store.data)));
            break;
        case Ist_StoreG: {
            IRStoreG *sg = st->Ist.StoreG.details;
            add_event(sbOut, K_STORE, sg->addr, sizeofIRType(typeOfIRExpr(tyenv, sg->data)), sg->guard);
            break;
        }
        case Ist_LoadG: {
            IRLoadG *lg = st->Ist.LoadG.details;
            IRType ty = Ity_INVALID, wide = Ity_INVALID;
            typeOfIRLoadGOp(lg->cvt, &wide, &ty);
            add_event(sbOut, K_LOAD, lg->addr, sizeofIRType(ty), lg->guard);
            break;
        }
        case Ist_Dirty: {
            IRDirty *d = st->Ist.Dirty.details;
            if (d->mFx != Ifx_None) {
                if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
                    add_event(sbOut, K_LOAD, d->mAddr, d->mSize, NULL);
                if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
                    add_store(sbOut, d->mAddr, d->mSize);
            }
            break;
        }
        case Ist_CAS: {
            IRCAS *cas = st->Ist.CAS.details;
            Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo)) * (cas->dataHi ? 2 : 1);
            add_event(sbOut, K_LOAD, cas->addr, size, NULL);
            add_store(sbOut, cas->addr, size);
            break;
        }
        case Ist_LLSC:
            if (st->Ist.LLSC.storedata == NULL) {
                add_event(sbOut, K_LOAD, st->Ist.LLSC.addr, sizeofIRType(typeOfIRTemp(tyenv, st->Ist.LLSC.result)), NULL);
                flush_events(sbOut);        /* nothing between a load-linked and its store */
            } else {
                add_store(sbOut, st->Ist.LLSC.addr, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.LLSC.storedata)));
            }
            break;
        case Ist_Exit:
            flush_events(sbOut);            /* what ran before a side exit, before it */
            break;
        default:
            break;
        }
        addStmtToIRSB(sbOut, st);
    }
    flush_events(sbOut);
    return sbOut;
}

/* ---- threads, children, exec, the end ---- */

static void vt_thread_create(ThreadId tid, ThreadId child)
{
    (void)tid; (void)child;
    threads++;
}

static void vt_fork_child(ThreadId tid)
{
    (void)tid;
    /* The child's copy of the buffer is the parent's to write, not the child's. */
    nbuf = 0;
    outlen = 0;
    active = False;
    VG_(close)((Int)clo_body_fd);
    VG_(close)((Int)clo_info_fd);
}

static void vt_fork_parent(ThreadId tid)
{
    (void)tid;
    forks++;
}

static void vt_pre_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs)
{
    (void)tid; (void)args; (void)nargs;
    if (active && (sysno == __NR_execve || sysno == __NR_execveat)) {
        /* The program valgrind started is about to be replaced: its trace ends here. */
        drain();
        ended_at_exec = True;
        end_body(0, False);
    }
}

static void vt_post_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs, SysRes res)
{
    (void)tid; (void)sysno; (void)args; (void)nargs; (void)res;
}

static void vt_fini(Int exitcode)
{
    if (active) {
        drain();
        end_body(exitcode, True);
    }
}

static Bool vt_process_cmd_line_option(const HChar *arg)
{
    if VG_BINT_CLO(arg, "--body-fd", clo_body_fd, 0, 1 << 20) {}
    else if VG_BINT_CLO(arg, "--info-fd", clo_info_fd, 0, 1 << 20) {}
    else if VG_BINT_CLO(arg, "--limit", clo_limit, 0, 1LL << 40) {}
    else if VG_BOOL_CLO(arg, "--text", clo_text) {}
    else
        return False;
    return True;
}

static void vt_print_usage(void)
{
    VG_(printf)("    --body-fd=N    write the trace body (wasm-core/docs/replay.md) to descriptor N\n"
                "    --info-fd=N    write progress lines and the closing summary to descriptor N\n"
                "    --limit=N      stop the program after N accesses [0: no limit]\n"
                "    --text=yes     write lackey's text lines (with sizes) instead of the body [no]\n");
}

static void vt_print_debug_usage(void)
{
    VG_(printf)("    (none)\n");
}

static void vt_post_clo_init(void)
{
    if (clo_body_fd < 0 || clo_info_fd < 0)
        VG_(fmsg_bad_option)("--body-fd / --info-fd", "vmtrace needs both descriptors (hw-lab/run trace passes them)\n");
    struct vg_stat st;
    if (VG_(fstat)((Int)clo_body_fd, &st) != 0 || VG_(fstat)((Int)clo_info_fd, &st) != 0)
        VG_(fmsg_bad_option)("--body-fd / --info-fd", "the descriptors are not open\n");
    Bool same = clo_info_fd == clo_body_fd;
    clo_body_fd = VG_(safe_fd)((Int)clo_body_fd);
    clo_info_fd = same ? clo_body_fd : VG_(safe_fd)((Int)clo_info_fd);
    last_progress_ms = VG_(read_millisecond_timer)();
}

static void vt_pre_clo_init(void)
{
    VG_(details_name)("vmtrace");
    VG_(details_version)(NULL);
    VG_(details_description)("vmemlab's recorder of memory accesses");
    VG_(details_copyright_author)("vmemlab (MIT)");
    VG_(details_bug_reports_to)("the vmemlab repository");
    VG_(details_avg_translation_sizeB)(200);
    VG_(basic_tool_funcs)(vt_post_clo_init, vt_instrument, vt_fini);
    VG_(needs_command_line_options)(vt_process_cmd_line_option, vt_print_usage, vt_print_debug_usage);
    VG_(needs_syscall_wrapper)(vt_pre_syscall, vt_post_syscall);
    VG_(track_pre_thread_ll_create)(vt_thread_create);
    VG_(atfork)(NULL, vt_fork_parent, vt_fork_child);
}

VG_DETERMINE_INTERFACE_VERSION(vt_pre_clo_init)
