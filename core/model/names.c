/* names.c — the names of the skinning methods and of the backends
 * (ssk_method_name, ssk_method_parse, ssk_backend_name, ssk_backend_parse)
 * and of the attachment modes (ssk_attachment_mode_name),
 * shared by the deformer-graph document, the deformer, the bake, `check`
 * and the command line, so that none of them reaches into another for
 * them. */
#include "model/internal.h"

#include <string.h>
#include <strings.h>

static const char *const method_names[SSK_METHOD_COUNT] = {"lbs", "dqs", "rigid", "irs",
                                                            "spring", "cor", "implicit"};
static const char *const backend_names[SSK_BACKEND_COUNT] = {"auto", "cpu", "gl"};
static const char *const attachment_names[SSK_ATTACHMENT_MODE_COUNT] = {"weights", "binding"};

const char *ssk_method_name(ssk_method method)
{
    return (unsigned)method < SSK_METHOD_COUNT ? method_names[method] : NULL;
}

const char *ssk_attachment_mode_name(ssk_attachment_mode mode)
{
    return (unsigned)mode < SSK_ATTACHMENT_MODE_COUNT ? attachment_names[mode] : NULL;
}

const char *ssk_backend_name(ssk_backend backend)
{
    return (unsigned)backend < SSK_BACKEND_COUNT ? backend_names[backend] : NULL;
}

ssk_status ssk_method_parse(ssk_method *out, const char *name, ssk_error *err)
{
    for (int m = 0; name && m < SSK_METHOD_COUNT; ++m)
        if (strcasecmp(name, method_names[m]) == 0) { /* "LBS" as Blender spells it */
            if (out) *out = (ssk_method)m;
            return ssk_error_ok(err);
        }
    return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                         "unknown method '%s' (expected lbs, dqs, rigid, irs, spring, cor or implicit)",
                         name ? name : "(null)");
}

ssk_status ssk_backend_parse(ssk_backend *out, const char *name, ssk_error *err)
{
    for (int b = 0; name && b < SSK_BACKEND_COUNT; ++b)
        if (strcasecmp(name, backend_names[b]) == 0) {
            if (out) *out = (ssk_backend)b;
            return ssk_error_ok(err);
        }
    return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                         "unknown backend '%s' (expected auto, cpu or gl)", name ? name : "(null)");
}
