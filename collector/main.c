/* placeholder until the daemon lands */
int main(void) { return 0; }
