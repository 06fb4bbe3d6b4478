/* errbuf.h - the one way lib/ fills a caller's error buffer: printf-style into err[errlen]
 * (nothing when err is NULL or errlen 0). A foundation; C and CUDA code (embbag.cu) call it. */
#ifndef AS_ERRBUF_H
#define AS_ERRBUF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void as_errbuf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif
