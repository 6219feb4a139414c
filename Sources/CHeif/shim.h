/* libheif (with libaom): the AVIF encoder that runs on the calling thread (halcyon_avifsave.c). */
#ifndef CHEIF_SHIM_H
#define CHEIF_SHIM_H
#include <libheif/heif.h>
#endif
