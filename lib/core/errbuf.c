/* errbuf.c - see errbuf.h */
#include "errbuf.h"

#include <stdarg.h>
#include <stdio.h>

void as_errbuf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
