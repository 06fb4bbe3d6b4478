/* test_planlabel.c - plan labels (lib/records/planlabel.h): every planner with every combination of
 * suffixes written and read back; the measured rounds; labels that are not ours; the exact
 * "ALG" / "ALG+refine" parse as-eval orders its tables by. */
#include "unit.h"

#include "planlabel.h"

#include <stdio.h>
#include <string.h>

TEST(planlabel_round_trip)
{
    char buf[128];
    for (int a = 0; a < AS_ALG_COUNT; a++)
        for (int bits = 0; bits < 8; bits++)
            for (int m = 0; m <= 3; m++) {
                const int split = bits & 1, dp = (bits >> 1) & 1, ref = (bits >> 2) & 1;
                as_plan_label_format((as_alg)a, split, dp, ref, m, buf, sizeof buf);
                as_plan_label l;
                as_plan_label_parse(buf, &l);
                CHECK(l.known && l.alg == (as_alg)a);
                CHECK_STR(l.base, as_alg_name((as_alg)a));
                CHECK(l.split == split && l.replicated == dp && l.refined == ref && l.measured == m);
            }
    CHECK_STR(as_plan_label_format(AS_ALG_COST, 1, 1, 1, 2, buf, sizeof buf), "cost-greedy+split+dp+refine+measured2");
    CHECK_STR(as_plan_label_format(AS_ALG_TORCHREC, 0, 0, 0, 1, buf, sizeof buf), "torchrec+measured");
    CHECK_STR(as_plan_label_format(AS_ALG_RANDOM, 0, 0, 0, 0, buf, sizeof buf), "random");
}

TEST(planlabel_foreign_and_odd)
{
    as_plan_label l;
    as_plan_label_parse("torchrec-own", &l);
    CHECK(!l.known && !l.split && !l.measured);
    CHECK_STR(l.base, "torchrec-own");
    as_plan_label_parse("torchrec-own+measured", &l);
    CHECK(!l.known && l.measured == 1);
    /* "+measured" with a count below 2, or no digits, is one round */
    as_plan_label_parse("lookup-greedy+measured1", &l);
    CHECK(l.known && l.measured == 1);
    as_plan_label_parse("lookup-greedy+measuredx", &l);
    CHECK(l.measured == 1);
    as_plan_label_parse("lookup-greedy+measured12", &l);
    CHECK(l.measured == 12);
    as_plan_label_parse("", &l);
    CHECK(!l.known && l.base[0] == 0);
    /* a base longer than the field is cut, and is no planner */
    char big[200];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    as_plan_label_parse(big, &l);
    CHECK(!l.known && strlen(l.base) == sizeof l.base - 1);
    as_alg a;
    CHECK(as_alg_parse("cost-greedy", &a) == 0 && a == AS_ALG_COST);
    CHECK(as_alg_parse("cost-greedy+split", &a) == -1);
    CHECK_STR(as_alg_name(AS_ALG_COUNT), "?");
}

TEST(planlabel_exact_parse)
{
    as_alg a;
    int r = -1;
    CHECK(as_alg_parse_label("dim-greedy", &a, &r) == 0 && a == AS_ALG_DIM && r == 0);
    CHECK(as_alg_parse_label("dim-greedy+refine", &a, &r) == 0 && a == AS_ALG_DIM && r == 1);
    CHECK(as_alg_parse_label("dim-greedy+split", &a, &r) == -1);
    CHECK(as_alg_parse_label("dim-greedy+refine+refine", &a, &r) == -1);
    CHECK(as_alg_parse_label("dim-greedy+refine+measured", &a, &r) == -1);
    CHECK(as_alg_parse_label("torchrec-own", &a, &r) == -1);
    CHECK(as_alg_parse_label("+refine", &a, &r) == -1);
}
