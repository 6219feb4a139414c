/* libwebp and its mux: the WebP encoder and the scaling loader that run on the calling thread
 * (halcyon_webpsave.c, halcyon_webpload.c). */
#ifndef CWEBP_SHIM_H
#define CWEBP_SHIM_H
#include <webp/decode.h>
#include <webp/encode.h>
#include <webp/mux.h>
#endif
