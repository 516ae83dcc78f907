/* 3-D Cartesian halo exchange (halo_grid.h). */
#define NDIMS 3
#include "halo_grid.h"
