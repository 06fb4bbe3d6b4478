/* test_trplanwrite.c - a plan as TorchRec's ShardingPlan (lib/plan/trplanwrite.h,
 * as_plan_print_torchrec): the whole line for hand-made plans (whole tables, column pieces,
 * data parallel, a name that needs escaping), the split tables' sharding types (row_wise,
 * table_row_wise, grid_shard) with their shards ordered by (r0, c0), the 2D rank map, and a
 * plan with an unplaced table refused with nothing written. */
#include "unit.h"

#include "fixtures.h"
#include "reclimits.h"
#include "trplanwrite.h"
#include "planrec.h"

#include <stdlib.h>
#include <string.h>

static as_features P(int64_t id, int64_t rows, int64_t dim, as_piece pc)
{
    as_features f = tsup_features(id, dim, rows, 1, 0, 0);
    f.piece = pc;
    return f;
}

/* the line printed for items f[0..n) placed by assign on K shards; *rc its return */
static char *print(const as_features *f, const int64_t *assign, int64_t n, int64_t K, int64_t world, int64_t L,
                   int *rc)
{
    const as_features *t[16];
    for (int64_t i = 0; i < n; i++) t[i] = &f[i];
    as_plan p;
    memset(&p, 0, sizeof p);
    p.n = n, p.shards = K, p.assign = (int64_t *)assign, p.feasible = 1;
    for (int64_t i = 0; i < n; i++)
        if (assign[i] == -1) p.feasible = 0;
    as_taskrec task = { .id = 5 };
    as_plan_meta m = { .task = &task, .alg = AS_ALG_SIZE, .world = world };
    as_torchrec_opts o = { .module = "emb", .local_size = L };
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    *rc = as_plan_print_torchrec(mf, &p, &m, t, &o);
    fclose(mf);
    return buf;
}

/* table 1 whole on rank 1; table 2's column pieces [8, 16) on rank 1 and [0, 8) on rank 0
 * (listed in that order, written by c0); table 3 data parallel; a table named a"b whole on
 * rank 0. The keys in the order of their first item; local size 0: 8 */
TEST(trplanwrite_whole_columns_dp_names)
{
    as_features f[5] = {
        P(1, 100, 16, AS_PIECE_WHOLE), P(2, 50, 8, (as_piece){ 8, 16, 0, 50 }), P(3, 20, 4, AS_PIECE_WHOLE),
        P(2, 50, 8, (as_piece){ 0, 8, 0, 50 }), P(4, 10, 4, AS_PIECE_WHOLE),
    };
    snprintf(f[4].name, sizeof f[4].name, "a\"b");
    const int64_t assign[5] = { 1, 1, AS_DP, 0, 0 };
    int rc = -9;
    char *s = print(f, assign, 5, 2, 0, 0, &rc);
    CHECK_EQ_I64(rc, 0);
    CHECK_STR(s, "{\"task\":5,\"alg\":\"size-greedy\",\"feasible\":true,\"world_size\":2,\"local_size\":8,"
                 "\"module\":\"emb\",\"plan\":{\"emb\":{"
                 "\"t1\":{\"sharding_type\":\"table_wise\",\"compute_kernel\":\"fused\",\"ranks\":[1],\"shards\":["
                 "{\"shard_offsets\":[0,0],\"shard_sizes\":[100,16],\"placement\":\"rank:1/cuda:1\"}]},"
                 "\"t2\":{\"sharding_type\":\"column_wise\",\"compute_kernel\":\"fused\",\"ranks\":[0,1],\"shards\":["
                 "{\"shard_offsets\":[0,0],\"shard_sizes\":[50,8],\"placement\":\"rank:0/cuda:0\"},"
                 "{\"shard_offsets\":[0,8],\"shard_sizes\":[50,8],\"placement\":\"rank:1/cuda:1\"}]},"
                 "\"t3\":{\"sharding_type\":\"data_parallel\",\"compute_kernel\":\"dense\",\"ranks\":[0,1],\"shards\":[]},"
                 "\"a\\\"b\":{\"sharding_type\":\"table_wise\",\"compute_kernel\":\"fused\",\"ranks\":[0],\"shards\":["
                 "{\"shard_offsets\":[0,0],\"shard_sizes\":[10,4],\"placement\":\"rank:0/cuda:0\"}]}}}}\n");
    free(s);
}

/* K = 4 in hosts of L = 2, world 8 (2 replicas: shard k on global ranks 2k, 2k + 1).
 * Table 1 (10 rows): blocks [0, 5), [5, 10) on ranks 2, 3, host 1's: table_row_wise.
 * Table 2 (2 rows): blocks [0, 1), [1, 2) on ranks 0, 1: host 0's, but also row_wise's blocks
 * of ceil(2 / 4) = 1 row from rank 0: row_wise. Table 3: four 5 x 2 pieces, given out of
 * order: grid_shard, written by (r0, c0). Table 4: blocks of 5 rows on ranks 1, 2 (two
 * hosts): row_wise. Placement cuda:r % 2. */
TEST(trplanwrite_split_types_2d)
{
    as_features f[10] = {
        P(1, 5, 4, (as_piece){ 0, 4, 0, 5 }),  P(1, 5, 4, (as_piece){ 0, 4, 5, 10 }),
        P(2, 1, 4, (as_piece){ 0, 4, 0, 1 }),  P(2, 1, 4, (as_piece){ 0, 4, 1, 2 }),
        P(3, 5, 2, (as_piece){ 2, 4, 5, 10 }), P(3, 5, 2, (as_piece){ 0, 2, 5, 10 }),
        P(3, 5, 2, (as_piece){ 2, 4, 0, 5 }),  P(3, 5, 2, (as_piece){ 0, 2, 0, 5 }),
        P(4, 5, 4, (as_piece){ 0, 4, 0, 5 }),  P(4, 5, 4, (as_piece){ 0, 4, 5, 10 }),
    };
    const int64_t assign[10] = { 2, 3, 0, 1, 3, 2, 1, 0, 1, 2 };
    int rc = -9;
    char *s = print(f, assign, 10, 4, 8, 2, &rc);
    CHECK_EQ_I64(rc, 0);
    const char *head = "{\"task\":5,\"alg\":\"size-greedy\",\"feasible\":true,\"world_size\":4,\"local_size\":2,"
                     "\"module\":\"emb\",\"dmp_collection\":{\"world_size\":8,\"sharding_group_size\":4,\"replicas\":2,"
                     "\"shard_ranks\":[[0,1],[2,3],[4,5],[6,7]]},\"plan\":{\"emb\":{";
    CHECK(strncmp(s, head, strlen(head)) == 0);
    CHECK(strstr(s, "\"t1\":{\"sharding_type\":\"table_row_wise\",\"compute_kernel\":\"fused\",\"ranks\":[2,3],\"shards\":["
                    "{\"shard_offsets\":[0,0],\"shard_sizes\":[5,4],\"placement\":\"rank:2/cuda:0\"},"
                    "{\"shard_offsets\":[5,0],\"shard_sizes\":[5,4],\"placement\":\"rank:3/cuda:1\"}]}") != NULL);
    CHECK(strstr(s, "\"t2\":{\"sharding_type\":\"row_wise\",\"compute_kernel\":\"fused\",\"ranks\":[0,1],") != NULL);
    CHECK(strstr(s, "\"t3\":{\"sharding_type\":\"grid_shard\",\"compute_kernel\":\"fused\",\"ranks\":[0,1,2,3],\"shards\":["
                    "{\"shard_offsets\":[0,0],\"shard_sizes\":[5,2],\"placement\":\"rank:0/cuda:0\"},"
                    "{\"shard_offsets\":[0,2],\"shard_sizes\":[5,2],\"placement\":\"rank:1/cuda:1\"},"
                    "{\"shard_offsets\":[5,0],\"shard_sizes\":[5,2],\"placement\":\"rank:2/cuda:0\"},"
                    "{\"shard_offsets\":[5,2],\"shard_sizes\":[5,2],\"placement\":\"rank:3/cuda:1\"}]}") != NULL);
    CHECK(strstr(s, "\"t4\":{\"sharding_type\":\"row_wise\",\"compute_kernel\":\"fused\",\"ranks\":[1,2],") != NULL);
    CHECK(strstr(s, "]}}}}\n") != NULL && s[strlen(s) - 1] == '\n' && strchr(s, '\n') == s + strlen(s) - 1);
    free(s);
    /* one host of all 4 ranks (L 4): table 1's blocks on ranks 2, 3 are no host's blocks: row_wise */
    s = print(f, assign, 10, 4, 0, 4, &rc);
    CHECK_EQ_I64(rc, 0);
    CHECK(strstr(s, "\"t1\":{\"sharding_type\":\"row_wise\"") != NULL);
    CHECK(strstr(s, "dmp_collection") == NULL);
    free(s);
}

/* a plan with an unplaced table: -1, nothing written; an empty plan: an empty module */
TEST(trplanwrite_infeasible_and_empty)
{
    as_features f[3] = { P(1, 10, 4, AS_PIECE_WHOLE), P(2, 10, 4, AS_PIECE_WHOLE), P(3, 10, 4, AS_PIECE_WHOLE) };
    const int64_t assign[3] = { 0, -1, 1 };
    int rc = 0;
    char *s = print(f, assign, 3, 2, 0, 8, &rc);
    CHECK_EQ_I64(rc, -1);
    CHECK_STR(s, "");
    free(s);
    s = print(f, assign, 0, 3, 0, 8, &rc);
    CHECK_EQ_I64(rc, 0);
    CHECK_STR(s, "{\"task\":5,\"alg\":\"size-greedy\",\"feasible\":true,\"world_size\":3,\"local_size\":8,"
                 "\"module\":\"emb\",\"plan\":{\"emb\":{}}}\n");
    free(s);
}
