/* MS_API marks the declarations of the public API. The library is compiled with every
 * symbol hidden (-fvisibility=hidden), so libmemsnap.so exports exactly the functions
 * declared with MS_API in these headers; tests/install.sh checks that against nm. */
#ifndef MEMSNAP_EXPORT_H
#define MEMSNAP_EXPORT_H

#ifndef MS_API /* predefined only by tests/install.sh, to find the marked declarations */
#if defined(__GNUC__) || defined(__clang__)
#define MS_API __attribute__((visibility("default")))
#else
#define MS_API
#endif
#endif

#endif
