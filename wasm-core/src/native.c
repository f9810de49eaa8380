/* Native paging: the MMU walks the guest's tables and a gpa is the hpa. */
#include "walk.h"

const mode_ops mode_native = {
    .name = "native",
    .translate = walk_guest,
    .event = walk_event,
};
