/* The library's own version (memsnap/version.h), compiled in from CMake's project(). */
#include "memsnap/version.h"

unsigned ms_version_number(void)
{
    return MS_VERSION_NUMBER;
}

const char *ms_version_string(void)
{
    return MS_VERSION_STRING;
}
