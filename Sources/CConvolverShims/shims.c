#include "CConvolverShims.h"
