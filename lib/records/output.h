/* output.h - every file a tool writes (-o, --report, --log, checkpoints), text or binary.
 *
 * A regular file, or a path that does not exist yet, is written under a temporary name
 * PATH.tmp.PID in the same directory and renamed over PATH by as_out_close, so PATH holds
 * either its old content or the complete new one, never a part. The temporary is created
 * late, when the first byte reaches it (or at as_out_close for an empty output), and it is
 * removed
 *   - by as_out_abort and on every error in this module,
 *   - at exit() (as_die included) when it was not committed,
 *   - on SIGINT, SIGTERM, SIGHUP and SIGPIPE while that signal has its default action
 *     (a signal the process ignores or handles itself is left alone): the handler unlinks
 *     the registered temporaries and raises the signal again with the default action.
 * The registry is a fixed table of AS_OUT_MAX paths; the handler only calls unlink(2),
 * sigaction(2), sigprocmask(2) and raise(3), which are async-signal-safe.
 * A replaced file keeps its permission bits; a symbolic link to a file has that file
 * replaced, the link stays. Devices and FIFOs (/dev/null, /dev/full, a named pipe) and
 * paths under /dev/ are written directly; NULL or "-" is standard output.
 *
 * Test hook: with AS_TEST_OUT_STOP=1 in the environment the process stops itself
 * (SIGSTOP) once, right after the first bytes reached a temporary, so a test can signal it
 * in the middle of writing (tests/test_helper/common.bash: kill_mid_write).
 */
#ifndef AS_OUTPUT_H
#define AS_OUTPUT_H

#include <stdio.h>

#define AS_OUT_MAX 32          /* temporaries alive at once */

typedef struct as_out as_out;

/* path NULL or "-": standard output. Prints and exits (2 for an empty name, 3 otherwise)
 * when the output cannot be opened. */
as_out *as_out_open(const char *path);
/* the stream to write to (buffered; stdout for standard output) */
FILE *as_out_file(as_out *o);
/* the path, or "<stdout>" */
const char *as_out_name(const as_out *o);
/* errno of the first failed write, 0 if none */
int as_out_error(const as_out *o);
/* flush, fsync and rename into place (close a device, check stdout); frees o. On an error
 * prints "PATH: write error: ...", removes the temporary and exits 3. */
void as_out_close(as_out *o);
/* drop the output: remove the temporary (PATH keeps its old content); frees o */
void as_out_abort(as_out *o);

/* Checks before any work. Returns 0 when PATH can be an output, else writes a message to
 * err and returns the exit code: 2 for an empty name or a directory, 3 when its directory
 * does not exist or is not writable. NULL and "-" are fine. */
int as_out_check_path(const char *path, char *err, size_t errlen);
/* 1 when both paths name the same existing file (device and inode); in NULL or "-" is
 * standard input */
int as_out_same_file(const char *out, const char *in);
/* 1 when two output names would write one file (the same file when both exist, else the
 * same absolute directory and name); "-" and NULL never */
int as_out_same_target(const char *a, const char *b);

/* the registry, for any temporary file: register a path (copied) to be removed at exit
 * and on the signals above; returns a slot, or -1 when the table is full */
int as_tmp_register(const char *path);
void as_tmp_unregister(int slot);

#endif
