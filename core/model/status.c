/* status.c — status names and messages (from SSK_STATUS_LIST), error setter. */
#include "model/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const status_names[] = {
#define SSK_STATUS_NAME_(name, message) #name,
    SSK_STATUS_LIST(SSK_STATUS_NAME_)
#undef SSK_STATUS_NAME_
};

static const char *const status_messages[] = {
#define SSK_STATUS_MESSAGE_(name, message) message,
    SSK_STATUS_LIST(SSK_STATUS_MESSAGE_)
#undef SSK_STATUS_MESSAGE_
};

const char *ssk_status_name(ssk_status status)
{
    if ((unsigned)status >= (unsigned)SSK_STATUS_COUNT) return "SSK_UNKNOWN";
    return status_names[status];
}

const char *ssk_status_message(ssk_status status)
{
    if ((unsigned)status >= (unsigned)SSK_STATUS_COUNT) return "unknown status";
    return status_messages[status];
}

const char *ssk_version_string(void) { return SSK_VERSION_STRING; }

ssk_status ssk_error_set(ssk_error *err, ssk_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->status = status;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

ssk_status ssk_error_ok(ssk_error *err)
{
    if (err) {
        err->status = SSK_OK;
        err->message[0] = '\0';
    }
    return SSK_OK;
}
