/* libwebp and its mux: the WebP encoder that runs on the calling thread (halcyon_webpsave.c). */
#ifndef CWEBP_SHIM_H
#define CWEBP_SHIM_H
#include <webp/encode.h>
#include <webp/mux.h>
#endif
