/* test_modelcfg.c - model configs (lib/data/modelcfg.h) parsed from JSON written here: every
 * field of the topology and the tables, the defaults, the data types' bytes, the batch and
 * its cap, the dense reservation (dense_parameters vs dense_tensor_estimate); refused
 * configs each -1 with a message naming the table and the field; as_mcfg_load (a missing
 * file, lookups files relative to the config's folder). */
#include "unit.h"

#include "modelcfg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a good table and topology for the configs below */
#define OK_T "{\"name\": \"a\", \"num_embeddings\": 10, \"embedding_dim\": 4}"
#define OK_TOPO "\"world_size\": 4, \"local_size\": 2, \"batch_size_per_rank\": 64"

static int parse(as_mcfg *c, const char *json, char *err, size_t errlen)
{
    err[0] = 0;
    return as_mcfg_parse(c, json, strlen(json), err, errlen);
}

TEST(modelcfg_dtype_bytes)
{
    CHECK_NEAR(as_mcfg_dtype_bytes("fp32"), 4, 0);
    CHECK_NEAR(as_mcfg_dtype_bytes("fp16"), 2, 0);
    CHECK_NEAR(as_mcfg_dtype_bytes("bf16"), 2, 0);
    CHECK_NEAR(as_mcfg_dtype_bytes("int8"), 1, 0);
    CHECK_NEAR(as_mcfg_dtype_bytes("int4"), 0.5, 0);
    CHECK_NEAR(as_mcfg_dtype_bytes("int2"), 0.25, 0);
    CHECK_NEAR(as_mcfg_dtype_bytes("FP16"), 2, 0);     /* case-insensitive */
    CHECK_NEAR(as_mcfg_dtype_bytes("fp64"), 0, 0);
    CHECK_NEAR(as_mcfg_dtype_bytes(""), 0, 0);
    CHECK_NEAR(as_mcfg_dtype_bytes("fp3"), 0, 0);
}

TEST(modelcfg_every_field)
{
    const char *json =
        "{\"name\": \"m\", \"source\": \"by hand\", \"module_path\": \"model.ebc\",\n"
        " \"topology\": {\"world_size\": 8, \"local_size\": 4, \"hbm_gib\": 0.5, \"batch_size_per_rank\": 64,\n"
        "   \"optimizer\": \"ADAM\", \"pipeline\": \"Train_Sparse_Dist\", \"dense_parameters\": 1000},\n"
        " \"tables\": [\n"
        "  {\"name\": \"a\", \"num_embeddings\": 1000, \"embedding_dim\": 16, \"feature_names\": [\"f1\", \"f2\"],\n"
        "   \"data_type\": \"FP16\", \"pooling_factor\": 3, \"bag\": \"fixed\", \"skew\": 1.5,\n"
        "   \"lookups\": {\"file\": \"x.pt\", \"table\": 2}},\n"
        "  {\"name\": \"b\", \"num_embeddings\": 2147483647, \"embedding_dim\": 4, \"pooling_factor\": 2.5, \"skew\": 0}]}\n";
    as_mcfg c;
    char err[512];
    CHECK_EQ_I64(parse(&c, json, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(c.name, "m");
    CHECK_STR(c.source, "by hand");
    CHECK_STR(c.module_path, "model.ebc");
    CHECK_EQ_I64(c.world_size, 8);
    CHECK_EQ_I64(c.local_size, 4);
    CHECK_NEAR(c.hbm_gib, 0.5, 0);
    CHECK_EQ_I64(c.batch_per_rank, 64);
    CHECK_STR(c.optimizer, "adam");                  /* stored lower case */
    CHECK_STR(c.pipeline, "train_sparse_dist");
    CHECK_EQ_I64(c.dense_parameters, 1000);
    CHECK_EQ_I64(c.dense_estimate, 0);
    CHECK_EQ_I64(as_mcfg_dense_bytes(&c), 24000);    /* 6 x 4 bytes x 1000 */
    CHECK_EQ_I64(as_mcfg_batch(&c), 512);            /* 64 per rank x 8 ranks */
    CHECK_EQ_I64(c.n, 2);
    const as_mcfg_table *a = &c.tables[0], *b = &c.tables[1];
    CHECK_STR(a->name, "a");
    CHECK_EQ_I64(a->rows, 1000);
    CHECK_EQ_I64(a->dim, 16);
    CHECK_EQ_I64(a->nfeatures, 2);
    CHECK_STR(a->features[0], "f1");
    CHECK_STR(a->features[1], "f2");
    CHECK_STR(a->data_type, "fp16");                 /* lower case */
    CHECK_NEAR(as_mcfg_dtype_bytes(a->data_type), 2, 0);
    CHECK_NEAR(a->pooling, 3, 0);
    CHECK_EQ_I64(a->fixed, 1);
    CHECK_NEAR(a->skew, 1.5, 0);
    CHECK_STR(a->lookups_file, "x.pt");              /* as given: as_mcfg_parse knows no folder */
    CHECK_EQ_I64(a->lookups_table, 2);
    /* b: the defaults of what it leaves out */
    CHECK_STR(b->name, "b");
    CHECK_EQ_I64(b->rows, 2147483647);
    CHECK_EQ_I64(b->dim, 4);
    CHECK_EQ_I64(b->nfeatures, 1);
    CHECK_STR(b->features[0], "b");                  /* the table's name */
    CHECK_STR(b->data_type, "fp32");
    CHECK_NEAR(b->pooling, 2.5, 0);
    CHECK_EQ_I64(b->fixed, 0);                       /* geometric */
    CHECK_NEAR(b->skew, 0, 0);                       /* given 0: uniform, not the default */
    CHECK_STR(b->lookups_file, "");
    as_mcfg_free(&c);
    CHECK(c.tables == NULL && c.n == 0);
    as_mcfg_free(&c);                                /* twice: harmless */
}

TEST(modelcfg_defaults_and_dense_bytes)
{
    as_mcfg c;
    char err[512];
    /* the smallest config: a topology of world_size and batch, one table */
    CHECK_EQ_I64(parse(&c, "{\"topology\": {\"world_size\": 3, \"batch_size_per_rank\": 5},"
                           " \"tables\": [{\"name\": \"t\", \"num_embeddings\": 7, \"embedding_dim\": 2}]}", err, sizeof err), 0);
    CHECK_STR(c.name, "");
    CHECK_STR(c.source, "");
    CHECK_STR(c.module_path, "");
    CHECK_EQ_I64(c.local_size, 3);                   /* = world_size */
    CHECK_NEAR(c.hbm_gib, AS_MCFG_HBM_GIB, 0);       /* 32 */
    CHECK_NEAR(c.hbm_gib, 32, 0);
    CHECK_STR(c.optimizer, "sgd");
    CHECK_STR(c.pipeline, "none");
    CHECK_EQ_I64(c.dense_parameters, 0);
    CHECK_EQ_I64(as_mcfg_dense_bytes(&c), 0);        /* neither given */
    CHECK_EQ_I64(as_mcfg_batch(&c), 15);
    CHECK_EQ_I64(c.n, 1);
    CHECK_NEAR(c.tables[0].pooling, 1, 0);
    CHECK_NEAR(c.tables[0].skew, AS_MCFG_SKEW, 0);   /* 0.8 */
    CHECK_EQ_I64(c.tables[0].fixed, 0);
    CHECK_STR(c.tables[0].data_type, "fp32");
    as_mcfg_free(&c);
    /* dense_tensor_estimate wins over dense_parameters */
    CHECK_EQ_I64(parse(&c, "{\"topology\": {\"world_size\": 1, \"batch_size_per_rank\": 1, \"dense_parameters\": 1000,"
                           " \"dense_tensor_estimate\": 12345}, \"tables\": [{\"name\": \"t\", \"num_embeddings\": 7, \"embedding_dim\": 2}]}",
                     err, sizeof err), 0);
    CHECK_EQ_I64(c.dense_parameters, 1000);
    CHECK_EQ_I64(c.dense_estimate, 12345);
    CHECK_EQ_I64(as_mcfg_dense_bytes(&c), 12345);
    as_mcfg_free(&c);
    /* the shipped DLRM-DCNv2's 16044545 dense parameters: 6 x 4 x 16044545 = 385069080 */
    CHECK_EQ_I64(parse(&c, "{\"topology\": {\"world_size\": 8, \"batch_size_per_rank\": 8192, \"dense_parameters\": 16044545},"
                           " \"tables\": [{\"name\": \"t\", \"num_embeddings\": 7, \"embedding_dim\": 2}]}", err, sizeof err), 0);
    CHECK_EQ_I64(as_mcfg_dense_bytes(&c), 385069080);
    CHECK_EQ_I64(as_mcfg_batch(&c), 65536);
    as_mcfg_free(&c);
    /* the largest dense_parameters, 2^40: 24 x 2^40 bytes */
    CHECK_EQ_I64(parse(&c, "{\"topology\": {\"world_size\": 1, \"batch_size_per_rank\": 1, \"dense_parameters\": 1099511627776},"
                           " \"tables\": [{\"name\": \"t\", \"num_embeddings\": 7, \"embedding_dim\": 2}]}", err, sizeof err), 0);
    CHECK(as_mcfg_dense_bytes(&c) == (uint64_t)24 << 40);
    as_mcfg_free(&c);
    /* hand-filled structs: as_mcfg_dense_bytes and as_mcfg_batch read the fields */
    memset(&c, 0, sizeof c);
    c.dense_parameters = 3;
    CHECK_EQ_I64(as_mcfg_dense_bytes(&c), 72);
    c.dense_estimate = 5;
    CHECK_EQ_I64(as_mcfg_dense_bytes(&c), 5);
    CHECK_EQ_I64(as_mcfg_batch(&c), -1);             /* no batch, no world */
    c.world_size = 2;
    c.batch_per_rank = AS_MCFG_MAX_BATCH / 2;
    CHECK_EQ_I64(as_mcfg_batch(&c), AS_MCFG_MAX_BATCH);   /* exactly the cap */
    c.batch_per_rank++;
    CHECK_EQ_I64(as_mcfg_batch(&c), -1);
}

TEST(modelcfg_optimizers_and_pipelines)
{
    /* every name the memory model knows, any case, stored lower case */
    static const char *const opt[] = { "sgd", "exact_sgd", "adam", "partial_rowwise_adam", "adagrad", "exact_adagrad",
                                       "rowwise_adagrad", "EXACT_ROWWISE_ADAGRAD" };
    static const char *const pipe[] = { "none", "train_base", "train_sparse_dist", "Train_Prefetch_Sparse_Dist" };
    for (int i = 0; i < 8; i++) {
        char json[512], err[512], low[64];
        snprintf(json, sizeof json, "{\"topology\": {\"world_size\": 1, \"batch_size_per_rank\": 1, \"optimizer\": \"%s\","
                 " \"pipeline\": \"%s\"}, \"tables\": [" OK_T "]}", opt[i], pipe[i % 4]);
        as_mcfg c;
        CHECK_EQ_I64(parse(&c, json, err, sizeof err), 0);
        size_t k = 0;
        for (; opt[i][k]; k++) low[k] = (char)(opt[i][k] >= 'A' && opt[i][k] <= 'Z' ? opt[i][k] + 32 : opt[i][k]);
        low[k] = 0;
        CHECK_STR(c.optimizer, low);
        for (k = 0; pipe[i % 4][k]; k++) low[k] = (char)(pipe[i % 4][k] >= 'A' && pipe[i % 4][k] <= 'Z' ? pipe[i % 4][k] + 32 : pipe[i % 4][k]);
        low[k] = 0;
        CHECK_STR(c.pipeline, low);
        as_mcfg_free(&c);
    }
}

TEST(modelcfg_batch_cap)
{
    as_mcfg c;
    char err[512];
    /* 2^24 lookups per bag set at most: 1 x 16777216 is fine, 64 x 1000000 is not */
    CHECK_EQ_I64(parse(&c, "{\"topology\": {\"world_size\": 1, \"batch_size_per_rank\": 16777216},"
                           " \"tables\": [{\"name\": \"t\", \"num_embeddings\": 7, \"embedding_dim\": 2}]}", err, sizeof err), 0);
    CHECK_EQ_I64(as_mcfg_batch(&c), 16777216);
    as_mcfg_free(&c);
    CHECK_EQ_I64(parse(&c, "{\"topology\": {\"world_size\": 64, \"batch_size_per_rank\": 1000000},"
                           " \"tables\": [{\"name\": \"t\", \"num_embeddings\": 7, \"embedding_dim\": 2}]}", err, sizeof err), -1);
    CHECK(strstr(err, "topology: batch_size_per_rank: times world_size is above 16777216") == err);
    as_mcfg_free(&c);
    CHECK_EQ_I64(parse(&c, "{\"topology\": {\"world_size\": 1, \"batch_size_per_rank\": 16777217},"
                           " \"tables\": [{\"name\": \"t\", \"num_embeddings\": 7, \"embedding_dim\": 2}]}", err, sizeof err), -1);
    CHECK(strstr(err, "topology: batch_size_per_rank: must be an integer in 1..16777216") == err);
    as_mcfg_free(&c);
}

/* a config with the table list body and topology body given, expected to fail with msg as
 * the start of err (exact prefix when prefix, else anywhere) */
static void refused(const char *topo, const char *tables, const char *msg, int prefix)
{
    char json[2048];
    snprintf(json, sizeof json, "{\"name\": \"t\", \"topology\": {%s}, \"tables\": [%s]}", topo, tables);
    as_mcfg c;
    char err[512];
    int rc = parse(&c, json, err, sizeof err);
    CHECK_EQ_I64(rc, -1);
    const char *at = strstr(err, msg);
    if (!CHECK(prefix ? at == err : at != NULL)) fprintf(stderr, "    config %s\n    err \"%s\"\n    want \"%s\"\n", json, err, msg);
    as_mcfg_free(&c);   /* also after an error */
}

TEST(modelcfg_refused_tables)
{
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"embedding_dim\": 4}", "table 1 (\"b\"): num_embeddings: missing (required)", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": -5, \"embedding_dim\": 4}",
            "table 1 (\"b\"): num_embeddings: must be an integer in 1..2147483647", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 2147483648, \"embedding_dim\": 4}",
            "table 1 (\"b\"): num_embeddings: must be an integer in 1..2147483647", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": \"5\", \"embedding_dim\": 4}",
            "table 1 (\"b\"): num_embeddings: must be an integer in 1..2147483647", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 0}", "table 1 (\"b\"): embedding_dim: must be an integer in 1..", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 2.5}", "table 1 (\"b\"): embedding_dim: must be an integer in 1..", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"c\", \"num_embeddings\": 5, \"embedding_dim\": 4}, " OK_T,
            "table 2 (\"a\"): name: repeats the name of table 0", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"data_type\": \"fp64\"}",
            "table 1 (\"b\"): data_type: unknown data type \"fp64\"", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"data_type\": 4}",
            "table 1 (\"b\"): data_type: must be a string", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embedding\": 5, \"embedding_dim\": 4}", "table 1 (\"b\"): unknown field \"num_embedding\"", 1);
    refused(OK_TOPO, OK_T ", {\"num_embeddings\": 5, \"embedding_dim\": 4}", "table 1: name: missing (required)", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"\", \"num_embeddings\": 5, \"embedding_dim\": 4}", "table 1: name: is empty", 1);
    refused(OK_TOPO, OK_T ", {\"name\": 3, \"num_embeddings\": 5, \"embedding_dim\": 4}", "table 1: name: must be a string", 1);
    refused(OK_TOPO, OK_T ", 7", "table 1: must be an object", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"pooling_factor\": 2.5, \"bag\": \"fixed\"}",
            "table 1 (\"b\"): bag: \"fixed\" needs an integer pooling_factor (it is 2.5)", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"bag\": \"poisson\"}",
            "table 1 (\"b\"): bag: unknown value \"poisson\"", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"pooling_factor\": -1}",
            "table 1 (\"b\"): pooling_factor: must be a number in 0..10000", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"pooling_factor\": 10001}",
            "table 1 (\"b\"): pooling_factor: must be a number in 0..10000", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"pooling_factor\": null}",
            "table 1 (\"b\"): pooling_factor: must be a number", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"skew\": 4.5}",
            "table 1 (\"b\"): skew: must be a number in 0..4", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"feature_names\": []}",
            "table 1 (\"b\"): feature_names: must be an array of 1..64 strings", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"feature_names\": \"f\"}",
            "table 1 (\"b\"): feature_names: must be an array of 1..64 strings", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"feature_names\": [\"f\", \"\"]}",
            "table 1 (\"b\"): feature_names: entry 1 is not a name of 1..127 bytes", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"feature_names\": [1]}",
            "table 1 (\"b\"): feature_names: entry 0 is not a name of 1..127 bytes", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"lookups\": \"x.pt\"}",
            "table 1 (\"b\"): lookups: must be an object", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"lookups\": {\"file\": \"x.pt\"}}",
            "table 1 (\"b\"): lookups: table: missing (required)", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"lookups\": {\"file\": \"\", \"table\": 0}}",
            "table 1 (\"b\"): lookups: file: is empty", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"lookups\": {\"file\": \"x\", \"table\": -1}}",
            "table 1 (\"b\"): lookups: table: must be an integer in 0..", 1);
    refused(OK_TOPO, OK_T ", {\"name\": \"b\", \"num_embeddings\": 5, \"embedding_dim\": 4, \"lookups\": {\"file\": \"x\", \"table\": 0, \"tab\": 1}}",
            "table 1 (\"b\"): lookups: unknown field \"tab\"", 1);
    /* with two names given twice, the first repeat in the file's order is the error: table 2
     * repeats table 0 (c), before table 3 repeats table 1 (a) */
    refused(OK_TOPO, "{\"name\": \"c\", \"num_embeddings\": 5, \"embedding_dim\": 4}, " OK_T
            ", {\"name\": \"c\", \"num_embeddings\": 5, \"embedding_dim\": 4}, " OK_T,
            "table 2 (\"c\"): name: repeats the name of table 0", 1);
    /* a NUL inside a name */
    refused(OK_TOPO, OK_T ", {\"name\": \"b\\u0000x\", \"num_embeddings\": 5, \"embedding_dim\": 4}",
            "table 1: name: holds a NUL character", 1);
    /* a name of 128 bytes does not fit AS_MCFG_NAME */
    char big[400];
    snprintf(big, sizeof big, OK_T ", {\"name\": \"%0128d\", \"num_embeddings\": 5, \"embedding_dim\": 4}", 0);
    refused(OK_TOPO, big, "table 1: name: longer than 127 bytes", 1);
}

TEST(modelcfg_refused_topology_and_top)
{
    refused("\"world_size\": 0, \"batch_size_per_rank\": 8", OK_T, "topology: world_size: must be an integer in 1..65536", 1);
    refused("\"world_size\": 65537, \"batch_size_per_rank\": 8", OK_T, "topology: world_size: must be an integer in 1..65536", 1);
    refused("\"batch_size_per_rank\": 8", OK_T, "topology: world_size: missing (required)", 1);
    refused("\"world_size\": 6, \"local_size\": 4, \"batch_size_per_rank\": 8", OK_T, "topology: local_size: 4 does not divide world_size 6", 1);
    refused("\"world_size\": 2, \"local_size\": 4, \"batch_size_per_rank\": 8", OK_T, "topology: local_size: must be an integer in 1..2", 1);
    refused("\"world_size\": 2", OK_T, "topology: batch_size_per_rank: missing (required)", 1);
    refused("\"world_size\": 2, \"batch_size_per_rank\": 0", OK_T, "topology: batch_size_per_rank: must be an integer in 1..16777216", 1);
    refused("\"world_size\": 2, \"batch_size_per_rank\": 8, \"optimizer\": \"rmsprop\"", OK_T, "topology: optimizer: unknown value \"rmsprop\"", 1);
    refused("\"world_size\": 2, \"batch_size_per_rank\": 8, \"pipeline\": \"async\"", OK_T, "topology: pipeline: unknown value \"async\"", 1);
    refused("\"world_size\": 2, \"batch_size_per_rank\": 8, \"hbm\": 80", OK_T, "topology: unknown field \"hbm\"", 1);
    refused("\"world_size\": 2, \"batch_size_per_rank\": 8, \"hbm_gib\": 0", OK_T, "topology: hbm_gib: must be a number in ", 1);
    refused("\"world_size\": 2, \"batch_size_per_rank\": 8, \"hbm_gib\": \"80\"", OK_T, "topology: hbm_gib: must be a number", 1);
    refused("\"world_size\": 2, \"batch_size_per_rank\": 8, \"dense_parameters\": -1", OK_T, "topology: dense_parameters: must be an integer in 0..", 1);
    refused("\"world_size\": 2, \"batch_size_per_rank\": 8, \"dense_parameters\": 1099511627777", OK_T,
            "topology: dense_parameters: must be an integer in 0..1099511627776", 1);
    refused("\"world_size\": 2, \"batch_size_per_rank\": 8, \"dense_tensor_estimate\": 1.5", OK_T,
            "topology: dense_tensor_estimate: must be an integer in 0..", 1);

    /* the top level */
    as_mcfg c;
    char err[512];
    CHECK_EQ_I64(parse(&c, "{\"topology\": {\"world_size\": 1, \"batch_size_per_rank\": 1}}", err, sizeof err), -1);
    CHECK_STR(err, "tables: missing (required)");
    as_mcfg_free(&c);
    CHECK_EQ_I64(parse(&c, "{\"topology\": {\"world_size\": 1, \"batch_size_per_rank\": 1}, \"tables\": []}", err, sizeof err), -1);
    CHECK(strstr(err, "tables: must be an array of 1..") == err);
    as_mcfg_free(&c);
    CHECK_EQ_I64(parse(&c, "{\"topology\": {\"world_size\": 1, \"batch_size_per_rank\": 1}, \"tables\": {}}", err, sizeof err), -1);
    CHECK(strstr(err, "tables: must be an array of 1..") == err);
    as_mcfg_free(&c);
    CHECK_EQ_I64(parse(&c, "{\"tables\": [" OK_T "]}", err, sizeof err), -1);
    CHECK_STR(err, "topology: missing (required)");
    as_mcfg_free(&c);
    CHECK_EQ_I64(parse(&c, "{\"topology\": [1], \"tables\": [" OK_T "]}", err, sizeof err), -1);
    CHECK_STR(err, "topology: must be an object");
    as_mcfg_free(&c);
    CHECK_EQ_I64(parse(&c, "[1, 2]", err, sizeof err), -1);
    CHECK_STR(err, "the config must be a JSON object");
    as_mcfg_free(&c);
    CHECK_EQ_I64(parse(&c, "{\"nam\": \"x\", \"topology\": {\"world_size\": 1, \"batch_size_per_rank\": 1}, \"tables\": [" OK_T "]}",
                       err, sizeof err), -1);
    CHECK(strstr(err, "unknown field \"nam\" (known: name, source, module_path, topology, tables)") == err);
    as_mcfg_free(&c);
    CHECK_EQ_I64(parse(&c, "{\"name\": 5, \"topology\": {\"world_size\": 1, \"batch_size_per_rank\": 1}, \"tables\": [" OK_T "]}",
                       err, sizeof err), -1);
    CHECK_STR(err, "name: must be a string");
    as_mcfg_free(&c);
}

TEST(modelcfg_refused_json)
{
    as_mcfg c;
    char err[512];
    /* a trailing comma: line 2, column 28 (the '}' after it) */
    CHECK_EQ_I64(parse(&c, "{\"topology\": {\"world_size\": 1,\n  \"batch_size_per_rank\": 1,},\n \"tables\": []}", err, sizeof err), -1);
    CHECK(strstr(err, "line 2, column 28:") == err);
    as_mcfg_free(&c);
    /* truncated text: the position after the last byte (line 1, column 38) */
    const char *cut = "{\"topology\": {\"world_size\": 1, \"batch";
    CHECK_EQ_I64(strlen(cut), 37);
    CHECK_EQ_I64(parse(&c, cut, err, sizeof err), -1);
    CHECK(strstr(err, "line 1, column ") == err);
    as_mcfg_free(&c);
    /* a good config cut anywhere is refused, never half read */
    const char *good = "{\"topology\": {\"world_size\": 2, \"batch_size_per_rank\": 4}, \"tables\": [" OK_T "]}";
    size_t n = strlen(good);
    int bad = 0;
    for (size_t k = 0; k < n; k++) {
        if (as_mcfg_parse(&c, good, k, err, sizeof err) != -1 || !err[0]) bad++;
        as_mcfg_free(&c);
    }
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(as_mcfg_parse(&c, good, n, err, sizeof err), 0);
    as_mcfg_free(&c);
    /* empty text, and a duplicate key */
    CHECK_EQ_I64(as_mcfg_parse(&c, "", 0, err, sizeof err), -1);
    CHECK(strstr(err, "line 1, column 1:") == err);
    as_mcfg_free(&c);
    CHECK_EQ_I64(parse(&c, "{\"name\": \"a\", \"name\": \"b\"}", err, sizeof err), -1);
    CHECK(strstr(err, "line 1, column ") == err && strstr(err, "duplicate key \"name\"") != NULL);
    as_mcfg_free(&c);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

TEST(modelcfg_load)
{
    as_mcfg c;
    char err[1024], path[512];
    /* a missing file: the path and the system's reason */
    snprintf(path, sizeof path, "%s/none.json", ut_tmpdir());
    CHECK_EQ_I64(as_mcfg_load(&c, path, err, sizeof err), -1);
    CHECK(strstr(err, path) == err);
    CHECK(strstr(err, ": No such file or directory") != NULL);
    as_mcfg_free(&c);
    /* a good file: lookups files relative to the config's folder, absolute ones kept */
    snprintf(path, sizeof path, "%s/mc.json", ut_tmpdir());
    write_file(path, "{\"topology\": {\"world_size\": 2, \"batch_size_per_rank\": 4}, \"tables\": ["
                     "{\"name\": \"a\", \"num_embeddings\": 10, \"embedding_dim\": 4, \"lookups\": {\"file\": \"sub/m.pt\", \"table\": 1}},"
                     "{\"name\": \"b\", \"num_embeddings\": 10, \"embedding_dim\": 4, \"lookups\": {\"file\": \"/abs/m.pt\", \"table\": 0}},"
                     "{\"name\": \"c\", \"num_embeddings\": 10, \"embedding_dim\": 4}]}\n");
    CHECK_EQ_I64(as_mcfg_load(&c, path, err, sizeof err), 0);
    CHECK_EQ_I64(c.n, 3);
    char want[600];
    snprintf(want, sizeof want, "%s/sub/m.pt", ut_tmpdir());
    CHECK_STR(c.tables[0].lookups_file, want);
    CHECK_EQ_I64(c.tables[0].lookups_table, 1);
    CHECK_STR(c.tables[1].lookups_file, "/abs/m.pt");
    CHECK_STR(c.tables[2].lookups_file, "");
    CHECK_EQ_I64(as_mcfg_batch(&c), 8);
    as_mcfg_free(&c);
    /* a bad file: its path, then the parser's message */
    write_file(path, "{\"topology\": {\"world_size\": 2, \"batch_size_per_rank\": 4}, \"tables\": ["
                     "{\"name\": \"a\", \"num_embeddings\": 0, \"embedding_dim\": 4}]}\n");
    CHECK_EQ_I64(as_mcfg_load(&c, path, err, sizeof err), -1);
    char msg[700];
    snprintf(msg, sizeof msg, "%s: table 0 (\"a\"): num_embeddings: must be an integer in 1..2147483647", path);
    CHECK_STR(err, msg);
    as_mcfg_free(&c);
    /* an empty file */
    write_file(path, "");
    CHECK_EQ_I64(as_mcfg_load(&c, path, err, sizeof err), -1);
    snprintf(msg, sizeof msg, "%s: line 1, column 1:", path);
    CHECK(strstr(err, msg) == err);
    as_mcfg_free(&c);
}
