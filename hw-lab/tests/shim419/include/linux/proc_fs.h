#include <shim419.h>
