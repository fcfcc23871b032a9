/* The chart model used to be called chart geometry; it is chart.h now. This name stays
 * so that code written against it (cli/) keeps building; new code includes chart.h. */
#include "chart.h"
