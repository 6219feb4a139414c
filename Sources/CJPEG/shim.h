/* libjpeg (libjpeg-turbo on Debian): the JPEG encoder that runs on the calling thread (halcyon_jpegsave.c). */
#ifndef CJPEG_SHIM_H
#define CJPEG_SHIM_H
#include <stdio.h>
#include <jpeglib.h>
#endif
