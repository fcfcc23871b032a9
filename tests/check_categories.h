/* What every test of categories opens first: a recording, the timeline of its busiest
 * device (check_open_timeline) and the categories built on it with the default
 * iterations. One place, so each test starts from its checks. */
#ifndef MEMSNAP_TEST_CHECK_CATEGORIES_H
#define MEMSNAP_TEST_CHECK_CATEGORIES_H

#include "check.h"
#include "memsnap/categories.h"

typedef struct check_cats {
    char path[256];
    ms_snapshot *s;
    ms_timeline *t;
    ms_categories *c;
    int device;
} check_cats;

static inline void check_cats_close(check_cats *x)
{
    ms_categories_free(x->c);
    ms_timeline_free(x->t);
    ms_snapshot_free(x->s);
    x->c = NULL;
    x->t = NULL;
    x->s = NULL;
}

/* `file`: a path, or a name without '/' for testdata/NAME.pickle. 0 with all three built
 * (each a check counted); else -1, the failure counted, nothing held. */
static inline int check_cats_open(check_cats *x, const char *file)
{
    memset(x, 0, sizeof *x);
    snprintf(x->path, sizeof x->path, strchr(file, '/') ? "%s" : "testdata/%s.pickle", file);
    if (check_open_timeline(x->path, &x->s, &x->device, &x->t))
        return -1;
    ms_error err;
    if (ms_categories_build(&x->c, x->s, x->device, x->t, NULL, &err)) {
        check_fail("%s: categories: %s", x->path, err.message);
        check_cats_close(x);
        return -1;
    }
    check_count++;
    return 0;
}

#endif
