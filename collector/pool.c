/* pool: placeholder */
