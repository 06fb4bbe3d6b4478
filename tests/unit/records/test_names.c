/* test_names.c - issue 50's one rule for names and labels (as_name_bad, lib/core/msgobj.h)
 * where records are read: a plan's alg, split, cost_device, cost_weights_type,
 * cost_optimizer and comm_model (evalplan), a table's data_type (as_table_data_type), a
 * plan's negative mem_bytes; the messages' escaping (as_text_escape, lib/core/common.h); CSV
 * and markdown fields (as_eval_csv_field, as_eval_md_cell); a refined plan record's figures
 * (as_planrec_refine_read). */
#include "unit.h"

#include "common.h"
#include "evaltext.h"
#include "planrec.h"
#include "msgobj.h"
#include "plan.h"
#include "planrec.h"
#include "table.h"

#include <stdlib.h>
#include <string.h>

static void pk_s(msgpack_packer *pk, const char *s, size_t n)
{
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void pk_ints(msgpack_packer *pk, int n, const int64_t *v)
{
    msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++) msgpack_pack_int64(pk, v[i]);
}

/* a measured plan of two shards (alg "size-greedy" unless key is "alg") with key = val[0..n)
 * (a string; key NULL: none) and mem_bytes {m0, m1}, read by as_planrec_full_read: its rc, and
 * the plan in *p when 0 */
static int plan_with(const char *key, const char *val, size_t n, int64_t m0, int64_t m1, as_planrec_full *p, char *err,
                     size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    const int alg = key && !strcmp(key, "alg");
    msgpack_pack_map(&pk, 9 + (key && !alg));
    static const int64_t ids[2] = { 0, 1 };
    pk_s(&pk, "kind", 4); pk_s(&pk, "plan", 4);
    pk_s(&pk, "task", 4); msgpack_pack_int64(&pk, 3);
    pk_s(&pk, "alg", 3);
    if (alg) pk_s(&pk, val, n);
    else pk_s(&pk, "size-greedy", 11);
    pk_s(&pk, "shards", 6); msgpack_pack_int64(&pk, 2);
    pk_s(&pk, "tables", 6); pk_ints(&pk, 2, ids);
    pk_s(&pk, "assign", 6); pk_ints(&pk, 2, ids);
    pk_s(&pk, "cost_ms", 7); msgpack_pack_array(&pk, 2); msgpack_pack_double(&pk, 2.0); msgpack_pack_double(&pk, 1.0);
    pk_s(&pk, "cost_kind", 9); pk_s(&pk, "measured", 8);
    const int64_t mem[2] = { m0, m1 };
    pk_s(&pk, "mem_bytes", 9); pk_ints(&pk, 2, mem);
    if (key && !alg) {
        pk_s(&pk, key, strlen(key));
        pk_s(&pk, val, n);
    }
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    int rc = -2;
    if (msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS)
        rc = as_planrec_full_read(&up.data, p, err, errlen);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/* the plan with key = s is refused with want in the message */
static void refused(const char *key, const char *s, size_t n, const char *want)
{
    as_planrec_full p;
    char err[512] = "";
    const int rc = plan_with(key, s, n, 1, 1, &p, err, sizeof err);
    CHECK_EQ_I64(rc, -1);
    if (!CHECK(strstr(err, want) != NULL)) fprintf(stderr, "    %s: err \"%s\", want \"%s\"\n", key, err, want);
    if (!rc) as_planrec_full_free(&p);
}

TEST(names_rule_line_separators)
{
    char why[96];
    /* U+2028 and U+2029 (E2 80 A8/A9) as C0 and C1 are: torchrec_plan.py's rule */
    CHECK(as_name_bad("a\xe2\x80\xa8" "b", 5, why, sizeof why) != NULL);
    CHECK(strstr(why, "U+2028 at offset 1") != NULL);
    CHECK(as_name_bad("\xe2\x80\xa9", 3, why, sizeof why) != NULL);
    CHECK(strstr(why, "U+2029 at offset 0") != NULL);
    /* their neighbours are printable */
    CHECK(as_name_bad("\xe2\x80\xa7\xe2\x80\xaa\xe2\x82\xac", 9, why, sizeof why) == NULL);
}

TEST(names_plan_labels_refused)
{
    refused("alg", "size-greedy\xe2\x80\xa8x", 14, "plan of task 3: 'alg' holds a line separator (U+2028 at offset 11)");
    refused("alg", "a\x1b[31m", 6, "plan of task 3: 'alg' holds a control character (byte 0x1b at offset 1)");
    refused("alg", "a\n0,0", 5, "'alg' holds a control character (byte 0x0a at offset 1)");
    refused("alg", "a\xc2\x9b" "1m", 5, "'alg' holds a control character (U+009B");
    refused("alg", "a\xff", 2, "'alg' is not valid UTF-8");
    refused("split", "te\xe2\x80\xa9st", 7, "plan of task 3: 'split' holds a line separator (U+2029");
    refused("split", "", 0, "plan of task 3: 'split' is empty");
    refused("cost_device", "cpu\r", 4, "plan of task 3: 'cost_device' holds a control character (byte 0x0d at offset 3)");
    refused("cost_weights_type", "fp\x7f", 3, "'cost_weights_type' holds a control character (byte 0x7f");
    refused("cost_optimizer", "sgd\x07", 4, "'cost_optimizer' holds a control character (byte 0x07");
    refused("comm_model", "nvlink8\x1b", 8, "'comm_model' holds a control character (byte 0x1b");
    refused("comm_model", "", 0, "'comm_model' is empty");
    /* good labels are read as they are: a comma, a quote and non-ASCII are printable */
    as_planrec_full p;
    char err[512];
    CHECK_EQ_I64(plan_with("alg", "own,\"json\" \xc3\xa9", 13, 1, 1, &p, err, sizeof err), 0);
    CHECK_STR(p.alg, "own,\"json\" \xc3\xa9");
    as_planrec_full_free(&p);
    CHECK_EQ_I64(plan_with("cost_device", "", 0, 1, 1, &p, err, sizeof err), 0);   /* as-bench: nothing measured */
    CHECK_STR(p.device, "");
    as_planrec_full_free(&p);
    CHECK_EQ_I64(plan_with("cost_device", "cpu: x", 6, 1, 1, &p, err, sizeof err), 0);
    CHECK_STR(p.device, "cpu: x");
    as_planrec_full_free(&p);
}

TEST(names_negative_mem_bytes_refused)
{
    as_planrec_full p;
    char err[512] = "";
    CHECK_EQ_I64(plan_with(NULL, NULL, 0, 100, -5, &p, err, sizeof err), -1);
    CHECK(strstr(err, "plan of task 3: mem_bytes[1] is -5, not a byte count >= 0") != NULL);
    CHECK_EQ_I64(plan_with(NULL, NULL, 0, 100, 0, &p, err, sizeof err), 0);
    CHECK_EQ_I64(p.mem[0], 100);
    as_planrec_full_free(&p);
}

/* a map {"data_type": value packed by how} through as_table_data_type: its rc, buf, err */
static int dtype_of(int how, const char *s, char *buf, size_t len, char *err, size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, how < 0 ? 0 : 1);
    if (how >= 0) pk_s(&pk, "data_type", 9);
    if (how == 0) pk_s(&pk, s, strlen(s));
    else if (how == 1) msgpack_pack_int64(&pk, 7);
    else if (how == 2) msgpack_pack_nil(&pk);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    int rc = -2;
    if (msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS)
        rc = as_table_data_type(&up.data, buf, len, err, errlen);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

TEST(names_table_data_type)
{
    char buf[8], err[256];
    CHECK_EQ_I64(dtype_of(-1, NULL, buf, sizeof buf, err, sizeof err), 0);   /* absent: none */
    CHECK_STR(buf, "");
    CHECK_EQ_I64(dtype_of(0, "FP16", buf, sizeof buf, err, sizeof err), 0);   /* any case, as as-convert */
    CHECK_STR(buf, "fp16");
    CHECK_EQ_I64(dtype_of(0, "int8", buf, sizeof buf, err, sizeof err), 0);
    CHECK_STR(buf, "int8");
    CHECK_EQ_I64(dtype_of(1, NULL, buf, sizeof buf, err, sizeof err), -1);
    CHECK_STR(err, "data_type is 7, not a data type (fp32, fp16, bf16, int8, int4, int2)");
    CHECK_EQ_I64(dtype_of(2, NULL, buf, sizeof buf, err, sizeof err), -1);
    CHECK(strstr(err, "data_type is nil, not a data type") != NULL);
    CHECK_EQ_I64(dtype_of(0, "", buf, sizeof buf, err, sizeof err), -1);
    CHECK(strstr(err, "data_type is \"\", not a data type") != NULL);
    CHECK_EQ_I64(dtype_of(0, "fp64", buf, sizeof buf, err, sizeof err), -1);
    CHECK(strstr(err, "data_type \"fp64\" is not a data type") != NULL);
    CHECK_EQ_I64(dtype_of(0, "fp1\x1b" "6", buf, sizeof buf, err, sizeof err), -1);
    CHECK(strstr(err, "data_type holds a control character (byte 0x1b at offset 3)") != NULL);
    CHECK_NEAR(as_table_dtype_bytes("BF16"), 2, 0);
    CHECK_NEAR(as_table_dtype_bytes("int4"), 0.5, 0);
    CHECK_NEAR(as_table_dtype_bytes(""), 0, 0);
}

TEST(names_text_escape)
{
    char out[128];
    CHECK_STR(as_text_escape(out, sizeof out, "caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");
    CHECK_STR(as_text_escape(out, sizeof out, "a\x1b[2J\n\tb\x7f"), "a\\x1b[2J\\n\\tb\\x7f");
    CHECK_STR(as_text_escape(out, sizeof out, "a\xc2\x9b" "b\xe2\x80\xa8" "c\xe2\x80\xa9"), "a\\u009bb\\u2028c\\u2029");
    CHECK_STR(as_text_escape(out, sizeof out, "a\x9b" "b\xff\xc3"), "a\\x9bb\\xff\\xc3");   /* not UTF-8 */
    /* cut at the buffer, never inside an escape */
    CHECK_STR(as_text_escape(out, 6, "ab\x1b" "cd"), "ab");
    CHECK_STR(as_text_escape(out, 7, "ab\x1b" "cd"), "ab\\x1b");
}

/* what write(f, s) writes */
static char *written(void (*write)(FILE *, const char *), const char *s)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    write(f, s);
    fclose(f);
    return buf;
}

TEST(names_csv_and_markdown_fields)
{
    static const char *const in[] = { "size-greedy", "own,json", "say \"hi\"", "a,\"b\"", "cr\rlf\n", "" };
    static const char *const want[] = { "size-greedy", "\"own,json\"", "\"say \"\"hi\"\"\"", "\"a,\"\"b\"\"\"",
                                        "\"cr\rlf\n\"", "" };
    for (int i = 0; i < 6; i++) {
        char *s = written(as_eval_csv_field, in[i]);
        CHECK_STR(s, want[i]);
        free(s);
    }
    char *s = written(as_eval_md_cell, "a|b\\c");
    CHECK_STR(s, "a\\|b\\\\c");
    free(s);
}

/* a plan record's options and refine (a field of its own) packed by how: 0 a full refine
   map, 1 swaps -1, 2 none, 3 a stop not known */
static int refine_of(int how, as_plan_refined *rf, char *err, size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, how == 2 ? 1 : 2);
    pk_s(&pk, "options", 7);
    msgpack_pack_map(&pk, how == 2 ? 1 : 2);
    pk_s(&pk, "seed", 4); msgpack_pack_int64(&pk, 0);
    if (how != 2) {
        pk_s(&pk, "refine_ms", 9); msgpack_pack_double(&pk, 50);
        pk_s(&pk, "refine", 6);
        msgpack_pack_map(&pk, 6);
        pk_s(&pk, "moves", 5); msgpack_pack_int64(&pk, 0);
        pk_s(&pk, "swaps", 5); msgpack_pack_int64(&pk, how == 1 ? -1 : 1);
        pk_s(&pk, "placed", 6); msgpack_pack_int64(&pk, 0);
        pk_s(&pk, "ms", 2); msgpack_pack_double(&pk, 0.5);
        pk_s(&pk, "pred_max_before", 15); msgpack_pack_double(&pk, 36.83);
        pk_s(&pk, "stop", 4);
        if (how == 3) pk_s(&pk, "bored", 5);
        else pk_s(&pk, "time", 4);
    }
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    int rc = -2;
    if (msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS)
        rc = as_planrec_refine_read(&up.data, rf, err, errlen);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

TEST(names_refine_figures_read)
{
    as_plan_refined rf;
    char err[256] = "";
    CHECK_EQ_I64(refine_of(0, &rf, err, sizeof err), 0);
    CHECK_EQ_I64(rf.done, 1);
    CHECK_EQ_I64(rf.moves, 0);
    CHECK_EQ_I64(rf.swaps, 1);
    CHECK_NEAR(rf.max_before, 36.83, 0);
    CHECK_NEAR(rf.ms, 0.5, 0);
    CHECK_NEAR(rf.budget_ms, 50, 0);
    CHECK(rf.stop && !strcmp(rf.stop, "time"));
    CHECK_EQ_I64(refine_of(2, &rf, err, sizeof err), 0);
    CHECK_EQ_I64(rf.done, 0);
    CHECK_EQ_I64(refine_of(1, &rf, err, sizeof err), -1);
    CHECK(strstr(err, "refine: 'swaps' = -1 is outside 0..") != NULL);
    CHECK_EQ_I64(refine_of(3, &rf, err, sizeof err), -1);
    CHECK(strstr(err, "refine: 'stop' is not") != NULL);
}
