#include <pthread.h>

#include "internal.h"

void ms__run_pair(void *(*fn)(void *), void *here, void *there)
{
    pthread_t helper;
    bool helped = pthread_create(&helper, NULL, fn, there) == 0;
    fn(here);
    if (helped)
        pthread_join(helper, NULL);
    else
        fn(there);
}
