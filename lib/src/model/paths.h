/* What a frame's file name says, whichever machine recorded it: the path rules behind
 * the frame classifier (sites.c) and the short names sites print. */
#ifndef MEMSNAP_PATHS_H
#define MEMSNAP_PATHS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum ms__file_kind {
    MS__FILE_USER,      /* Python nothing below claims: the user's own code */
    MS__FILE_STDLIB,    /* the interpreter's own library (user by kind, never the user's line) */
    MS__FILE_LIBRARY,   /* an installed package other than torch */
    MS__FILE_TORCH,     /* torch's own package, installed or a source checkout */
    MS__FILE_COMPILER,  /* torch's Dynamo and Inductor (torch/_dynamo/, torch/_inductor/) */
    MS__FILE_GENERATED, /* code torch.compile wrote: Inductor's output modules, FX graphs */
    MS__FILE_NATIVE     /* not Python: a shared library or C++ source */
} ms__file_kind;

/* One rule for every path: '/' and '\\' both separate parts, and the markers
 * (site-packages, dist-packages, torch) match in any case, so a recording made on
 * Windows classifies as one made on Linux. */
ms__file_kind ms__file_classify(const char *path);

/* Code torch.compile wrote (MS__FILE_GENERATED), told by its name alone: cheaper than
 * ms__file_classify, for a pass over every frame. */
bool ms__file_is_generated(const char *path);

/* "dir/file.py": the last `parts` parts of a path joined by '/', whatever separated them
 * (0: every part). A text writer. */
size_t ms__path_short(const char *path, unsigned parts, char *buf, size_t cap);

/* The last part of a path (a shared library's name). */
const char *ms__path_base(const char *path);

/* What names a generated module to a person: "inductor cztfzrza" (the first eight
 * characters of Inductor's hash-named module), "<eval_with_key>.3" (an FX graph).
 * A text writer. */
size_t ms__path_generated_tag(const char *path, char *buf, size_t cap);

#endif
