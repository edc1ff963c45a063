/* The image builder's entry point for the sqk tool. */
#ifndef SQK_MKIMAGE_H
#define SQK_MKIMAGE_H

/* Runs `sqk mkimage` with argv[0] = "mkimage". Returns the process exit status. */
int sqk_mkimage_main(int argc, char **argv);

#endif
