/* SPDX-License-Identifier: BSD-2-Clause */
/* SQK_API marks the functions libsqk.so exports: the library is built with -fvisibility=hidden,
 * so everything else (the reader's and the builder's internals) stays private to it. */
#ifndef SQK_API_H
#define SQK_API_H

#ifdef __cplusplus
extern "C" {
#endif

#define SQK_API __attribute__((visibility("default")))

#ifdef __cplusplus
}
#endif

#endif
