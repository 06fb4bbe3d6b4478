/* comm.c - an item's communication; see comm.h */
#include "comm.h"

void as_comm_bytes(const as_features *f, double *in, double *out)
{
    *in = (double)f->lookups * 8.0;
    *out = 2.0 * (double)f->batch * (double)f->dim * 4.0;
}

double as_comm_ms(const as_features *f, double gbps)
{
    if (!(gbps > 0)) return 0;
    double in, out;
    as_comm_bytes(f, &in, &out);
    return (in + out) / (gbps * 1073741824.0) * 1e3;
}
