/* output.c - atomic outputs and the registry of temporary files; see output.h */
#include "output.h"
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ==== the registry =================================================================== */

#define TMP_PATH_MAX 4096

static struct {
    volatile sig_atomic_t used;
    char path[TMP_PATH_MAX];
} reg[AS_OUT_MAX];
static volatile pid_t reg_pid;   /* the process that registered: a forked child removes nothing */
static pthread_t reg_thread;     /* its first registering thread, which commits the outputs */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static const int reg_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
#define NSIGS ((int)(sizeof reg_sigs / sizeof reg_sigs[0]))
static int atexit_done;
static volatile sig_atomic_t exiting;   /* set at exit(): buffered output must not create a temporary */

static void unlink_all(void)
{
    if (getpid() != reg_pid) return;
    for (int i = 0; i < AS_OUT_MAX; i++)
        if (__atomic_load_n(&reg[i].used, __ATOMIC_ACQUIRE)) unlink(reg[i].path);
}

/* async-signal-safe: unlink(2), sigaction(2), sigprocmask(2), raise(3) */
static void on_fatal_signal(int sig)
{
    /* A signal to the process can land on any thread that does not block it (OpenMP and
     * OpenBLAS workers): after SIGSTOP and SIGCONT, say, a worker may take it while the
     * committing thread runs on and renames a temporary into place before the process dies.
     * Hand it to the committing thread, which then stops where it is (pthread_kill is
     * async-signal-safe). */
    if (getpid() == reg_pid && !pthread_equal(pthread_self(), reg_thread)) {
        pthread_kill(reg_thread, sig);
        return;
    }
    unlink_all();
    struct sigaction sa;
    sa.sa_handler = SIG_DFL;
    sa.sa_flags = 0;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    sigprocmask(SIG_UNBLOCK, &s, NULL);
    raise(sig);
}

static void on_exit_cleanup(void)
{
    exiting = 1;
    unlink_all();
    for (int i = 0; i < AS_OUT_MAX; i++) __atomic_store_n(&reg[i].used, 0, __ATOMIC_RELEASE);
}

static void block_sigs(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    for (int i = 0; i < NSIGS; i++) sigaddset(&s, reg_sigs[i]);
    pthread_sigmask(SIG_BLOCK, &s, old);
}

static void restore_sigs(const sigset_t *old)
{
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* install the handler for every signal that has its default action now (not one the
 * process ignores, e.g. under nohup, or handles itself, e.g. as-rl's graceful stop);
 * checked at every registration, so a disposition reset in between is noticed */
static void install_handlers(void)
{
    for (int i = 0; i < NSIGS; i++) {
        struct sigaction cur;
        if (sigaction(reg_sigs[i], NULL, &cur) || (cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        for (int k = 0; k < NSIGS; k++) sigaddset(&sa.sa_mask, reg_sigs[k]);
        sigaction(reg_sigs[i], &sa, NULL);
    }
}

int as_tmp_register(const char *path)
{
    if (strlen(path) >= TMP_PATH_MAX) return -1;
    sigset_t old;
    block_sigs(&old);
    pthread_mutex_lock(&reg_lock);
    if (!atexit_done) { atexit(on_exit_cleanup); atexit_done = 1; }
    if (reg_pid != getpid()) {
        reg_thread = pthread_self();
        __atomic_thread_fence(__ATOMIC_RELEASE);   /* the thread before the pid that a handler checks */
        reg_pid = getpid();
    }
    install_handlers();
    int slot = -1;
    for (int i = 0; i < AS_OUT_MAX; i++) {
        if (reg[i].used) continue;
        memcpy(reg[i].path, path, strlen(path) + 1);
        __atomic_store_n(&reg[i].used, 1, __ATOMIC_RELEASE);
        slot = i;
        break;
    }
    pthread_mutex_unlock(&reg_lock);
    restore_sigs(&old);
    return slot;
}

void as_tmp_unregister(int slot)
{
    if (slot < 0 || slot >= AS_OUT_MAX) return;
    __atomic_store_n(&reg[slot].used, 0, __ATOMIC_RELEASE);
}

/* ==== outputs ========================================================================= */

enum { OUT_STDOUT, OUT_DIRECT, OUT_TEMP };

struct as_out {
    int kind;
    FILE *f;
    char *path, *tmp;
    int fd, slot, err;
};

static int stop_hook = -1;   /* AS_TEST_OUT_STOP: -1 unread, 0 off, 1 armed, 2 done */

static int is_direct(const char *path)
{
    struct stat st;
    if (!strncmp(path, "/dev/", 5)) return 1;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode);
}

/* create the temporary next to the path and register it; -1 with errno */
static int create_tmp(as_out *o)
{
    size_t n = strlen(o->path) + 48;
    o->tmp = as_malloc(n);
    sigset_t old;
    block_sigs(&old);   /* this thread takes no signal between registering and creating */
    int fd = -1, e = 0;
    /* The name is registered before the file is created: a signal that another thread of the
     * process takes meanwhile (OpenMP workers do not block it) then finds it registered and
     * unlinks it, instead of killing the process with a temporary just created and not yet
     * known to the handler. */
    for (int k = 0; k < 1000 && fd < 0; k++) {
        if (k == 0) snprintf(o->tmp, n, "%s.tmp.%ld", o->path, (long)getpid());
        else snprintf(o->tmp, n, "%s.tmp.%ld.%d", o->path, (long)getpid(), k);
        if ((o->slot = as_tmp_register(o->tmp)) < 0) { e = EMFILE; break; }
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0) {
            e = errno ? errno : EEXIST;
            as_tmp_unregister(o->slot);
            o->slot = -1;
            if (e != EEXIST) break;
        }
    }
    if (fd >= 0) e = 0;
    restore_sigs(&old);
    if (fd < 0) {
        free(o->tmp);
        o->tmp = NULL;
        errno = e;
        return -1;
    }
    /* a file replaced keeps its permissions */
    struct stat st;
    if (stat(o->path, &st) == 0 && S_ISREG(st.st_mode)) (void)fchmod(fd, st.st_mode & 07777);
    o->fd = fd;
    return 0;
}

static void drop_tmp(as_out *o)
{
    if (o->fd >= 0) { close(o->fd); o->fd = -1; }
    if (o->tmp) {
        unlink(o->tmp);
        as_tmp_unregister(o->slot);
        free(o->tmp);
        o->tmp = NULL;
    }
}

static ssize_t cookie_write(void *cookie, const char *buf, size_t n)
{
    as_out *o = cookie;
    /* exit() flushes stdio after the atexit handlers: an output never committed stays so */
    if (exiting && !o->err) o->err = ECANCELED;
    if (o->err) { errno = o->err; return -1; }
    if (n == 0) return 0;
    if (o->fd < 0 && create_tmp(o)) { o->err = errno; return -1; }
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(o->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { o->err = w < 0 ? errno : EIO; errno = o->err; return -1; }
        done += (size_t)w;
    }
    if (stop_hook == 1) { stop_hook = 2; raise(SIGSTOP); }
    return (ssize_t)n;
}

static int cookie_close(void *cookie)
{
    (void)cookie;
    return 0;
}

int as_out_check_path(const char *path, char *err, size_t errlen)
{
    if (!path || !strcmp(path, "-")) return 0;
    if (!*path) { snprintf(err, errlen, "empty output file name"); return AS_EXIT_USAGE; }
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) { snprintf(err, errlen, "%s: is a directory", path); return AS_EXIT_USAGE; }
        if (!S_ISREG(st.st_mode)) return 0;   /* a device or a fifo: written directly */
    }
    if (!strncmp(path, "/dev/", 5)) return 0;
    /* the temporary and the rename need a writable directory */
    char *dir = as_strdup(path);
    char *slash = strrchr(dir, '/');
    const char *d = dir;
    if (!slash) d = ".";
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    int rc = 0;
    if (stat(d, &st)) { snprintf(err, errlen, "%s: directory %s: %s", path, d, strerror(errno)); rc = AS_EXIT_ENV; }
    else if (!S_ISDIR(st.st_mode)) { snprintf(err, errlen, "%s: %s is not a directory", path, d); rc = AS_EXIT_ENV; }
    else if (access(d, W_OK | X_OK)) { snprintf(err, errlen, "%s: directory %s: %s", path, d, strerror(errno)); rc = AS_EXIT_ENV; }
    free(dir);
    return rc;
}

int as_out_same_file(const char *out, const char *in)
{
    struct stat so, si;
    if (!out || !strcmp(out, "-") || stat(out, &so) || !S_ISREG(so.st_mode)) return 0;
    if (!in || !strcmp(in, "-")) { if (fstat(0, &si)) return 0; }
    else if (stat(in, &si)) return 0;
    return so.st_dev == si.st_dev && so.st_ino == si.st_ino;
}

/* the directory part made absolute (realpath), then the last component: two names of one
 * file that may not exist yet */
static char *target_name(const char *p)
{
    char *dup = as_strdup(p);
    char *slash = strrchr(dup, '/');
    const char *base = slash ? slash + 1 : dup;
    if (slash) *slash = 0;
    char *dir = realpath(slash ? (*dup ? dup : "/") : ".", NULL);
    char *out = NULL;
    if (dir) {
        size_t n = strlen(dir) + strlen(base) + 2;
        out = as_malloc(n);
        snprintf(out, n, "%s/%s", dir, base);
        free(dir);
    }
    free(dup);
    return out;
}

int as_out_same_target(const char *a, const char *b)
{
    if (!a || !b || !strcmp(a, "-") || !strcmp(b, "-")) return 0;
    struct stat sa, sb;
    if (!stat(a, &sa) && !stat(b, &sb)) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *x = target_name(a), *y = target_name(b);
    int same = x && y && !strcmp(x, y);
    free(x); free(y);
    return same;
}

as_out *as_out_open(const char *path)
{
    as_out *o = as_calloc(1, sizeof *o);
    o->fd = -1;
    o->slot = -1;
    if (!path || !strcmp(path, "-")) {
        o->kind = OUT_STDOUT;
        o->f = stdout;
        return o;
    }
    char err[1024];
    int code = as_out_check_path(path, err, sizeof err);
    if (code) as_die(code, "%s", err);
    /* a symbolic link: the file it names is replaced (next to it), not the link */
    struct stat lst;
    char *real = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) ? realpath(path, NULL) : NULL;
    o->path = real ? real : as_strdup(path);
    if (is_direct(path)) {
        /* a device or a fifo (/dev/null, /dev/full, a named pipe): write it directly */
        o->kind = OUT_DIRECT;
        o->f = fopen(path, "wb");
        if (!o->f) as_die(AS_EXIT_ENV, "%s: cannot open: %s", path, strerror(errno));
        return o;
    }
    if (stop_hook < 0) {
        const char *e = getenv("AS_TEST_OUT_STOP");
        stop_hook = e && !strcmp(e, "1");
    }
    pthread_mutex_lock(&reg_lock);
    if (!atexit_done) { atexit(on_exit_cleanup); atexit_done = 1; }
    pthread_mutex_unlock(&reg_lock);
    o->kind = OUT_TEMP;
    cookie_io_functions_t io = { NULL, cookie_write, NULL, cookie_close };
    o->f = fopencookie(o, "w", io);
    if (!o->f) as_die(AS_EXIT_ENV, "%s: cannot open: %s", path, strerror(errno));
    setvbuf(o->f, NULL, _IOFBF, (size_t)1 << 16);
    return o;
}

FILE *as_out_file(as_out *o) { return o->f; }
const char *as_out_name(const as_out *o) { return o->path ? o->path : "<stdout>"; }
int as_out_error(const as_out *o) { return o->err; }

static _Noreturn void out_fail(as_out *o, const char *what, int e)
{
    if (o->err) e = o->err;
    if (!e) e = EIO;
    o->err = e;   /* the flush at exit() writes nothing more */
    const char *name = as_out_name(o);
    drop_tmp(o);
    as_die(AS_EXIT_ENV, "%s: %s: %s", name, what, strerror(e));
}

void as_out_close(as_out *o)
{
    if (!o) return;
    errno = 0;
    int bad = fflush(o->f) || ferror(o->f);
    if (o->kind == OUT_STDOUT) {
        if (bad) out_fail(o, "write error", errno);
        free(o);
        return;
    }
    if (o->kind == OUT_DIRECT) {
        if (bad) out_fail(o, "write error", errno);
        if (fclose(o->f)) { o->f = NULL; out_fail(o, "write error", errno); }
    } else {
        if (bad || o->err) out_fail(o, "write error", errno);
        if (o->fd < 0 && create_tmp(o)) out_fail(o, "cannot create a temporary file", errno);   /* empty output */
        if (fsync(o->fd) && errno != EINVAL) out_fail(o, "write error", errno);
        int fd = o->fd;
        o->fd = -1;
        if (close(fd)) out_fail(o, "write error", errno);
        if (rename(o->tmp, o->path)) out_fail(o, "cannot rename into place", errno);
        as_tmp_unregister(o->slot);
        fclose(o->f);   /* the cookie: nothing left to flush */
    }
    free(o->path);
    free(o->tmp);
    free(o);
}

void as_out_abort(as_out *o)
{
    if (!o) return;
    if (o->kind == OUT_STDOUT) { free(o); return; }
    if (o->kind == OUT_TEMP) {
        o->err = o->err ? o->err : ECANCELED;   /* fclose's flush must not create a temporary */
        fclose(o->f);
        drop_tmp(o);
    } else {
        fclose(o->f);
    }
    free(o->path);
    free(o->tmp);
    free(o);
}
