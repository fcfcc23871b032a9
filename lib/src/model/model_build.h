/* The model builder (model_build.c), for the reader's entry points (snapshot.c). */
#ifndef MEMSNAP_MODEL_BUILD_H
#define MEMSNAP_MODEL_BUILD_H

#include "read/pickle_vm.h"

/* Builds the typed model from vm->result once ms__vm_run has succeeded. */
int ms__model_build(ms_vm *vm);

#endif
