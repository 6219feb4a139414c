#define _GNU_SOURCE
#include "halcyon_vips.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* MARK: - libvips' loadable modules */

int hc_load_module(const char *name) {
    /* libvips' modules sit in vips-modules-<major>.<minor> beside the library
     * itself (Debian: /usr/lib/x86_64-linux-gnu/vips-modules-8.14). */
    Dl_info info;
    if (dladdr((void *)vips_init, &info) == 0 || info.dli_fname == NULL) {
        vips_error("halcyon", "%s", "cannot locate libvips");
        return -1;
    }
    const char *slash = strrchr(info.dli_fname, '/');
    const int folder = slash == NULL ? 1 : (int)(slash - info.dli_fname);
    char path[PATH_MAX];
    const int written = snprintf(path, sizeof(path), "%.*s/vips-modules-%d.%d/%s.so", folder,
                                 slash == NULL ? "." : info.dli_fname, VIPS_MAJOR_VERSION, VIPS_MINOR_VERSION, name);
    if (written < 0 || (size_t)written >= sizeof(path)) {
        vips_error("halcyon", "%s", "module path too long");
        return -1;
    }
    /* What g_module_open does for libvips: open for good, then run the
     * module's g_module_check_init, which registers its operations (it does
     * not use its argument). The module can never be unloaded: its types are
     * registered with GLib. */
    void *module = dlopen(path, RTLD_LAZY | RTLD_NODELETE);
    if (module == NULL) {
        vips_error("halcyon", "cannot load %s: %s", path, dlerror());
        return -1;
    }
    typedef const char *(*hc_module_init)(void *);
    hc_module_init init = (hc_module_init)dlsym(module, "g_module_check_init");
    const char *refused = init == NULL ? "no g_module_check_init" : init(NULL);
    if (refused != NULL) {
        vips_error("halcyon", "cannot start %s: %s", path, refused);
        return -1;
    }
    return 0;
}
