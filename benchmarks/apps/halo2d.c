/* 2-D Cartesian halo exchange (halo_grid.h). */
#define NDIMS 2
#include "halo_grid.h"
