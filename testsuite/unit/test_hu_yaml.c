/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests: libhutil's YAML reader (hu_yaml.c): the tree, every node's position,
 * the limits and the refusals with their positions. */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "libhutil/hu_yaml.h"
#include "testutil.h"

static hu_yaml_fail_t fail;
static hu_error_t err;

/* The one document of text (NULL when refused: fail and err kept). */
static hu_ydoc_t *read1(const char *text, const hu_yaml_opts_t *o)
{
    hu_yaml_t *y = hu_yaml_open(text, strlen(text), o, &err);
    hu_ydoc_t *doc = NULL;
    int rc;

    ck_assert_ptr_nonnull(y);
    memset(&fail, 0, sizeof(fail));
    memset(&err, 0, sizeof(err));
    rc = hu_yaml_next(y, &doc, &fail, &err);
    if (rc == 1) {
        hu_ydoc_t *more = NULL;
        rc = hu_yaml_next(y, &more, &fail, &err);
        ck_assert_ptr_null(more);
        if (rc < 0) {
            hu_ydoc_free(doc);
            doc = NULL;
        }
    }
    hu_yaml_close(y);
    return doc;
}

static const hu_yaml_opts_t limited = { .max_depth = 3, .max_nodes = 12, .one_doc = true };

START_TEST(test_positions)
{
    const char *text = "# comment\n"
                       "platform:\n"
                       "  nodes: 4\n"
                       "  name: 'bb'\n"
                       "apps:\n"
                       "  - {w: 70 s, n: [1, 2]}\n"
                       "  -   x\n";
    const hu_yaml_opts_t o = { .one_doc = true };
    hu_ydoc_t *doc = read1(text, &o);
    ck_assert_ptr_nonnull(doc);
    hu_ynode_t *root = hu_ydoc_root(doc);
    ck_assert_int_eq(root->type, HU_YAML_MAP);
    ck_assert_int_eq(root->line, 2);
    ck_assert_int_eq(root->col, 1);
    ck_assert_uint_eq(root->n, 4);

    hu_ynode_t *plat = hu_ymap_get(root, "platform");
    ck_assert_int_eq(plat->type, HU_YAML_MAP);
    ck_assert_int_eq(plat->line, 3);
    ck_assert_int_eq(plat->col, 3);
    hu_ynode_t *k = hu_ymap_key(plat, "nodes"), *v = hu_ymap_get(plat, "nodes");
    ck_assert_int_eq(k->line, 3);
    ck_assert_int_eq(k->col, 3);
    ck_assert_str_eq(v->str, "4");
    ck_assert_uint_eq(v->len, 1);
    ck_assert(v->plain);
    ck_assert_int_eq(v->line, 3);
    ck_assert_int_eq(v->col, 10);
    v = hu_ymap_get(plat, "name");
    ck_assert_str_eq(v->str, "bb");
    ck_assert(!v->plain);
    ck_assert_int_eq(v->col, 9);
    ck_assert_ptr_null(hu_ymap_get(plat, "missing"));
    ck_assert_ptr_null(hu_ymap_key(plat, "missing"));

    hu_ynode_t *apps = hu_ymap_get(root, "apps");
    ck_assert_int_eq(apps->type, HU_YAML_SEQ);
    ck_assert_uint_eq(apps->n, 2);
    hu_ynode_t *a0 = apps->kids[0];
    ck_assert_int_eq(a0->type, HU_YAML_MAP);
    ck_assert_int_eq(a0->line, 6);
    ck_assert_int_eq(a0->col, 5);
    hu_ynode_t *ns = hu_ymap_get(a0, "n");
    ck_assert_int_eq(ns->type, HU_YAML_SEQ);
    ck_assert_uint_eq(ns->n, 2);
    ck_assert_str_eq(ns->kids[1]->str, "2");
    ck_assert_int_eq(ns->kids[1]->line, 6);
    ck_assert_int_eq(ns->kids[1]->col, 22);
    ck_assert_int_eq(apps->kids[1]->line, 7);
    ck_assert_int_eq(apps->kids[1]->col, 7);
    hu_ydoc_free(doc);
}
END_TEST

START_TEST(test_documents)
{
    static const char two[] = "a: 1\n---\nb: [\n";
    hu_yaml_opts_t o = { 0 };
    hu_yaml_t *y = hu_yaml_open(two, strlen(two), &o, &err);
    hu_ydoc_t *doc = NULL;

    /* without one_doc: documents one by one, the second's error only when read */
    ck_assert_int_eq(hu_yaml_next(y, &doc, &fail, &err), 1);
    ck_assert_str_eq(hu_ymap_get(hu_ydoc_root(doc), "a")->str, "1");
    hu_ydoc_free(doc);
    ck_assert_int_eq(hu_yaml_next(y, &doc, &fail, &err), -1);
    ck_assert_int_eq(fail.why, HU_YAML_SYNTAX);
    ck_assert_int_eq(fail.line, 4);
    ck_assert_int_eq(fail.col, 1);
    ck_assert_int_eq(errno, EINVAL);
    hu_yaml_close(y);

    /* one_doc: the second document is refused where it starts */
    o.one_doc = true;
    ck_assert_ptr_null(read1(two, &o));
    ck_assert_int_eq(fail.why, HU_YAML_DOCS);
    ck_assert_int_eq(fail.line, 2);
    ck_assert_int_eq(fail.col, 1);
    ck_assert_str_eq(err.text, "2:1: only one YAML document is allowed");

    /* no document at all */
    y = hu_yaml_open("# nothing\n", 10, &o, &err);
    ck_assert_int_eq(hu_yaml_next(y, &doc, &fail, &err), 0);
    ck_assert_int_eq(hu_yaml_next(y, &doc, &fail, &err), 0);
    hu_yaml_close(y);
}
END_TEST

START_TEST(test_errors)
{
    ck_assert_ptr_null(read1("a: 1\nb: [1, 2\n", &limited));
    ck_assert_int_eq(fail.why, HU_YAML_SYNTAX);
    ck_assert_int_eq(fail.line, 3);
    ck_assert_int_eq(fail.col, 1);
    ck_assert_str_eq(fail.problem, "did not find expected ',' or ']'");
    ck_assert_str_eq(fail.context, "while parsing a flow sequence");
    ck_assert_str_eq(err.text, "3:1: YAML syntax error: did not find expected ',' or ']' "
                               "while parsing a flow sequence");

    /* libyaml's reader gives an offset: turned into the line and column */
    ck_assert_ptr_null(read1("a: 1\nb: x\xff\n", &limited));
    ck_assert_int_eq(fail.why, HU_YAML_ENCODING);
    ck_assert_int_eq(fail.line, 2);
    ck_assert_int_eq(fail.col, 5);

    ck_assert_ptr_null(read1("a: &x 1\nb: *x\n", &limited));
    ck_assert_int_eq(fail.why, HU_YAML_ALIAS);
    ck_assert_int_eq(fail.line, 1);
    ck_assert_int_eq(fail.col, 4);
    ck_assert_str_eq(err.text, "1:4: anchors and aliases are not supported");
}
END_TEST

START_TEST(test_limits)
{
    /* depth 3 is the limit, the 4th collection is refused where it starts */
    hu_ydoc_t *doc = read1("a: {b: [1]}\n", &limited);
    ck_assert_ptr_nonnull(doc);
    hu_ydoc_free(doc);
    ck_assert_ptr_null(read1("a: {b: [[1]]}\n", &limited));
    ck_assert_int_eq(fail.why, HU_YAML_DEPTH);
    ck_assert_int_eq(fail.line, 1);
    ck_assert_int_eq(fail.col, 9);
    ck_assert_str_eq(err.text, "1:9: nesting deeper than 3 levels");

    /* 12 nodes is the limit (a map of 5 pairs, 11 nodes, and a list of 1: 13) */
    doc = read1("[a, b, c, d, e, f, g, h, i, j, k]\n", &limited);
    ck_assert_ptr_nonnull(doc);
    hu_ydoc_free(doc);
    ck_assert_ptr_null(read1("[a, b, c, d, e, f, g, h, i, j, k, l]\n", &limited));
    ck_assert_int_eq(fail.why, HU_YAML_NODES);
    ck_assert_int_eq(fail.col, 35);
    ck_assert_str_eq(err.text, "1:35: too many YAML nodes (more than 12)");
}
END_TEST

START_TEST(test_aliases)
{
    /* an alias is the anchored node itself (its position), not a copy: a "billion
     * laughs" does not grow the tree */
    const hu_yaml_opts_t o = { .aliases = true, .max_nodes = 100 };
    const char *text = "a: &x [1, 2]\nb: *x\nc: [*x, *x, *x, *x, *x, *x, *x, *x]\n";
    hu_ydoc_t *doc = read1(text, &o);
    ck_assert_ptr_nonnull(doc);
    hu_ynode_t *root = hu_ydoc_root(doc);
    ck_assert_ptr_eq(hu_ymap_get(root, "a"), hu_ymap_get(root, "b"));
    ck_assert_int_eq(hu_ymap_get(root, "b")->line, 1);
    ck_assert_int_eq(hu_ymap_get(root, "b")->col, 4); /* the anchor's */
    ck_assert_ptr_eq(hu_ymap_get(root, "c")->kids[7], hu_ymap_get(root, "a"));
    hu_ydoc_free(doc);

    ck_assert_ptr_null(read1("a: *nope\n", &o));
    ck_assert_int_eq(fail.why, HU_YAML_SYNTAX);
    ck_assert_str_eq(fail.problem, "found undefined alias");
    ck_assert_int_eq(fail.col, 4);
    ck_assert_ptr_null(read1("a: &x 1\nb: &x 2\n", &o));
    ck_assert_str_eq(fail.problem, "second occurrence");
    ck_assert_int_eq(fail.line, 2);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = { { "hu_yaml",
                                    .tests = { test_positions, test_documents, test_errors,
                                               test_limits, test_aliases, NULL } } };
    return tu_main("hu_yaml", tcases, TU_COUNT(tcases));
}
