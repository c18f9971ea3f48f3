/* SPDX-License-Identifier: GPL-2.0 */
/*
 * webcfg.h - energystat --web.config.file: TLS and basic authentication for
 * --listen, from an exporter-toolkit web configuration file.
 */
#ifndef ENERGYSTAT_WEBCFG_H
#define ENERGYSTAT_WEBCFG_H

#include <stdbool.h>
#include <microhttpd.h>

struct webcfg;

/* Read and check FILE; errors printed, NULL on any. */
struct webcfg *webcfg_load(const char *file);
void webcfg_free(struct webcfg *w);

/* MHD_start_daemon's extra flags and options (MHD_OPTION_ARRAY); w may be NULL */
unsigned int webcfg_flags(const struct webcfg *w);
struct MHD_OptionItem *webcfg_options(struct webcfg *w);

/*
 * A request's check, first thing in the handler: true when it is refused
 * (401 or 403 queued, *ret the handler's return), false to serve it.
 */
bool webcfg_refuse(struct webcfg *w, struct MHD_Connection *c,
		   enum MHD_Result *ret);

#endif /* ENERGYSTAT_WEBCFG_H */
